// ES module entry: the same functions as the CommonJS one (index.js).
import limitlab from './index.js';

export const { startLimitlab, findBinary, LimitlabError, ReplyError, PLATFORMS } = limitlab;
