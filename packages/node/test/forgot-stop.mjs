// Not a test: a script that starts a server and never stops it. tests/packages/main.rs checks that
// Node still exits by itself (the helper holds no reference on the event loop) and the server with it.
import { startLimitlab } from 'limitlab';

const ll = await startLimitlab({ cluster: 3 });
await ll.advance(1);
console.log(ll.pid);
