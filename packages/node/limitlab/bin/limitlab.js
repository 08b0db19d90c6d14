#!/usr/bin/env node
'use strict';
// `npx limitlab ...`: runs the platform package's binary with the same arguments, stdio and exit
// status (a signal that ends it ends this process the same way).
const { spawnSync } = require('node:child_process');
const { findBinary } = require('../index.js');

let bin;
try {
  bin = findBinary();
} catch (err) {
  console.error(`limitlab: ${err.message}`);
  process.exit(1);
}
const r = spawnSync(bin, process.argv.slice(2), { stdio: 'inherit' });
if (r.error) {
  console.error(`limitlab: cannot run ${bin}: ${r.error.message}`);
  process.exit(1);
}
if (r.signal) process.kill(process.pid, r.signal);
process.exit(r.status ?? 1);
