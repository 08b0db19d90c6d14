// Not a test: the run tests/packages/main.rs kills with SIGKILL. Starts a server and a cluster
// through the helper, writes their pids to argv[2], then waits to be killed (bounded).
import { writeFileSync, renameSync } from 'node:fs';
import { startLimitlab } from 'limitlab';

const one = await startLimitlab();
const three = await startLimitlab({ cluster: 3 });
const file = process.argv[2];
writeFileSync(`${file}.tmp`, `${one.pid} ${three.pid}`);
renameSync(`${file}.tmp`, file);
setTimeout(() => {}, 120_000);
