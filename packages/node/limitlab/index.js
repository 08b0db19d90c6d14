'use strict';
// limitlab for Node: find the platform's binary and drive `limitlab serve` from a test (node:test,
// Jest, Vitest). No dependency: RESP is spoken through `net`; @sinonjs/fake-timers is loaded only
// when `fakeTimers: true` asks for it.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');

/** The platform packages, by `${process.platform}-${process.arch}`. */
const PLATFORMS = {
  'linux-x64': '@limitlab/linux-x64',
};

/** Kept of the server's stderr for messages and `log()`. */
const LOG_TAIL = 64 * 1024;

/** Servers still running: killed when this process exits normally (one listener for them all). */
const live = new Set();
let exitHooked = false;
function killLiveOnExit(child) {
  live.add(child);
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', () => {
      for (const c of live) c.kill('SIGKILL');
    });
  }
}

class LimitlabError extends Error {
  constructor(message) {
    super(message);
    this.name = 'LimitlabError';
  }
}

/**
 * The limitlab executable: `$LIMITLAB_BIN`, else the one in this platform's package.
 * @returns {string}
 */
function findBinary() {
  if (process.env.LIMITLAB_BIN) return process.env.LIMITLAB_BIN;
  const key = `${process.platform}-${process.arch}`;
  const pkg = PLATFORMS[key];
  if (!pkg) {
    throw new LimitlabError(
      `limitlab has no binary for ${key} (packages exist for ${Object.keys(PLATFORMS).join(', ')}); ` +
        'build it with `cargo install --path .` from the repository and set LIMITLAB_BIN',
    );
  }
  let dir;
  try {
    dir = path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    throw new LimitlabError(
      `the package ${pkg} is not installed (an optional dependency of limitlab: was it installed ` +
        'with --no-optional or --omit=optional?); or set LIMITLAB_BIN',
    );
  }
  const bin = path.join(dir, 'bin', process.platform === 'win32' ? 'limitlab.exe' : 'limitlab');
  if (!fs.existsSync(bin)) throw new LimitlabError(`${pkg} has no binary at ${bin}`);
  return bin;
}

/** A RESP2 error reply. */
class ReplyError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ReplyError';
  }
}

/** One connection to one node, commands answered in order. Unreferenced: never keeps Node alive. */
class Connection {
  constructor(host, port, password) {
    this.host = host;
    this.port = port;
    this.password = password;
    this.socket = null;
    this.buf = Buffer.alloc(0);
    this.waiting = [];
  }

  command(args) {
    if (!this.socket) this.open();
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      // Referenced while a reply is awaited, so that Node waits for it; unreferenced when idle.
      this.socket.ref();
      this.socket.write(encode(args));
    });
  }

  open() {
    const socket = net.createConnection({ host: this.host, port: this.port });
    socket.setNoDelay(true);
    socket.unref();
    socket.on('data', (chunk) => {
      this.buf = Buffer.concat([this.buf, chunk]);
      for (;;) {
        const parsed = parse(this.buf, 0);
        if (!parsed) break;
        this.buf = this.buf.subarray(parsed.end);
        const w = this.waiting.shift();
        if (w) (parsed.value instanceof ReplyError ? w.reject : w.resolve)(parsed.value);
      }
      if (this.waiting.length === 0) socket.unref();
    });
    const fail = (err) => {
      const waiting = this.waiting;
      this.waiting = [];
      this.socket = null;
      this.buf = Buffer.alloc(0);
      for (const w of waiting) w.reject(err || new LimitlabError('the connection to limitlab serve closed'));
    };
    socket.on('error', fail);
    socket.on('close', () => fail());
    this.socket = socket;
    if (this.password !== undefined) {
      this.waiting.push({ resolve() {}, reject() {} });
      socket.write(encode(['AUTH', this.password]));
    }
  }

  close() {
    if (this.socket) this.socket.destroy();
    this.socket = null;
  }
}

function encode(args) {
  const parts = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const b = Buffer.isBuffer(a) ? a : Buffer.from(String(a));
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

/** One reply from `buf` at `at`: `{ value, end }`, or null when it is not all there yet. */
function parse(buf, at) {
  const eol = buf.indexOf('\r\n', at);
  if (eol < 0) return null;
  const kind = String.fromCharCode(buf[at]);
  const line = buf.toString('utf8', at + 1, eol);
  const next = eol + 2;
  switch (kind) {
    case '+':
      return { value: line, end: next };
    case '-':
      return { value: new ReplyError(line), end: next };
    case ':':
      return { value: Number(line), end: next };
    case '$': {
      const n = Number(line);
      if (n < 0) return { value: null, end: next };
      if (buf.length < next + n + 2) return null;
      return { value: buf.toString('utf8', next, next + n), end: next + n + 2 };
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return { value: null, end: next };
      const items = [];
      let end = next;
      for (let i = 0; i < n; i++) {
        const item = parse(buf, end);
        if (!item) return null;
        items.push(item.value);
        end = item.end;
      }
      return { value: items, end };
    }
    default:
      return { value: new ReplyError(`unexpected reply line ${JSON.stringify(kind + line)}`), end: next };
  }
}

/**
 * The process's fake clock, moved with the server's. `spec` is `true` (install
 * @sinonjs/fake-timers, faking Date only), sinon's install options, or a runner's timer controls
 * (Vitest's `vi`, Jest's `jest`, node:test's `mock.timers`, a sinon clock), whose fake timers the
 * test has enabled.
 */
function processClock(spec, now, wall) {
  if (spec === true || (typeof spec === 'object' && spec !== null && !isControls(spec))) {
    let FakeTimers;
    try {
      FakeTimers = require('@sinonjs/fake-timers');
    } catch {
      throw new LimitlabError('fakeTimers: true needs @sinonjs/fake-timers: npm install -D @sinonjs/fake-timers');
    }
    const options = { toFake: ['Date'], shouldAdvanceTime: wall, ...(spec === true ? {} : spec), now };
    const clock = FakeTimers.install(options);
    return {
      advance: (ms) => clock.tickAsync(ms),
      set: (ms) => clock.setSystemTime(ms),
      stop: () => clock.uninstall(),
    };
  }
  if (!isControls(spec)) throw new LimitlabError('fakeTimers: expected true, sinon install options, or vi / jest / mock.timers');
  const c = spec;
  const set = (ms) => (typeof c.setSystemTime === 'function' ? c.setSystemTime(ms) : c.setTime(ms));
  set(now);
  return {
    async advance(ms) {
      if (typeof c.advanceTimersByTimeAsync === 'function') await c.advanceTimersByTimeAsync(ms);
      else if (typeof c.advanceTimersByTime === 'function') c.advanceTimersByTime(ms);
      else if (typeof c.tickAsync === 'function') await c.tickAsync(ms);
      else c.tick(ms);
    },
    set,
    stop() {},
  };
}

function isControls(x) {
  return (
    typeof x === 'object' &&
    x !== null &&
    (typeof x.setSystemTime === 'function' || typeof x.setTime === 'function') &&
    (typeof x.advanceTimersByTime === 'function' || typeof x.tick === 'function')
  );
}

/**
 * Starts `limitlab serve --port 0` and resolves once it listens.
 * @param {import('./index').StartOptions} [options]
 * @returns {Promise<import('./index').Limitlab>}
 */
async function startLimitlab(options = {}) {
  const clock = options.clock ?? 'virtual';
  if (clock !== 'virtual' && clock !== 'wall') throw new LimitlabError(`clock must be 'virtual' or 'wall', not ${clock}`);
  const bin = options.binary ?? findBinary();
  const args = ['serve', '--port', '0', '--exit-with-stdin', '--clock', clock];
  if (options.cluster !== undefined) args.push('--cluster', String(options.cluster));
  if (options.at !== undefined) args.push('--at', String(options.at));
  if (options.requirepass !== undefined) args.push('--requirepass', options.requirepass);
  args.push(...(options.args ?? []));
  const commandLine = [bin, ...args].join(' ');

  // stdin is a pipe this process holds and never writes: when it exits, however it exits, the
  // server sees end of file and exits too (--exit-with-stdin).
  const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let log = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (s) => {
    log = (log + s).slice(-LOG_TAIL);
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let ended = false;
  exited.then(() => {
    ended = true;
    live.delete(child);
  });
  killLiveOnExit(child);

  const line = await new Promise((resolve, reject) => {
    let out = '';
    const timeout = setTimeout(() => finish(new LimitlabError(`no line within ${options.startupTimeoutMs ?? 30000} ms`)), options.startupTimeoutMs ?? 30000);
    const onData = (chunk) => {
      out += chunk;
      const nl = out.indexOf('\n');
      if (nl >= 0) finish(null, out.slice(0, nl).trim());
    };
    const onExit = (code, signal) => finish(new LimitlabError(`it exited (${signal ?? `status ${code}`})`));
    const onError = (err) => finish(new LimitlabError(`cannot run ${bin}: ${err.message}`));
    function finish(err, value) {
      clearTimeout(timeout);
      child.stdout.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
      if (err) reject(err);
      else resolve(value);
    }
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  }).catch(async (err) => {
    child.kill('SIGKILL');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
    throw new LimitlabError(`limitlab serve did not start (${commandLine}): ${err.message}\nits log:\n${log}`);
  });
  if (!line.startsWith('listening on ')) {
    child.kill('SIGKILL');
    throw new LimitlabError(`limitlab serve's first line is ${JSON.stringify(line)}\nits log:\n${log}`);
  }
  // Drain anything else it prints; never let its pipes or the process keep the event loop alive.
  child.stdout.resume();
  child.unref();
  for (const s of [child.stdin, child.stdout, child.stderr]) s.unref();

  const addrs = line.slice('listening on '.length).split(' ').map((a) => {
    const i = a.lastIndexOf(':');
    return { host: a.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(a.slice(i + 1)) };
  });
  const host = addrs[0].host;
  const ports = addrs.map((a) => a.port);
  const conns = addrs.map((a) => new Connection(a.host, a.port, options.requirepass));
  const auth = options.requirepass !== undefined ? `:${encodeURIComponent(options.requirepass)}@` : '';
  const urls = ports.map((p) => `redis://${auth}${host}:${p}`);

  let fake = null;
  let stopped = false;
  const command = (...cmd) => {
    if (stopped || ended) return Promise.reject(new LimitlabError(`limitlab serve is not running; its log:\n${log}`));
    return conns[0].command(cmd);
  };
  const now = async () => Number(await command('CLOCK.GET'));

  const ll = {
    host,
    port: ports[0],
    ports,
    url: urls[0],
    urls,
    pid: child.pid,
    clockMode: clock,
    command,
    async commandOn(node, ...cmd) {
      if (stopped || ended) throw new LimitlabError(`limitlab serve is not running; its log:\n${log}`);
      return conns[node].command(cmd);
    },
    now,
    async advance(ms) {
      await command('CLOCK.ADVANCE', Math.trunc(ms));
      if (fake) await fake.advance(Math.trunc(ms));
      return now();
    },
    async set(unixMs) {
      await command('CLOCK.SET', Math.trunc(unixMs));
      if (fake) fake.set(Math.trunc(unixMs));
      return now();
    },
    async flush() {
      for (let i = 0; i < conns.length; i++) await ll.commandOn(i, 'FLUSHALL');
    },
    log: () => log,
    get running() {
      return !ended && !stopped;
    },
    get followsProcess() {
      return fake !== null;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      if (fake) fake.stop();
      fake = null;
      for (const c of conns) c.close();
      child.stdin.end();
      // Referenced while waiting for the exit, so that Node waits too.
      child.ref();
      let timer;
      const late = new Promise((r) => {
        timer = setTimeout(() => r(true), 10000);
      });
      if (await Promise.race([exited.then(() => false), late])) {
        child.kill('SIGKILL');
        await exited;
      }
      clearTimeout(timer);
      child.unref();
      },
  };
  if (typeof Symbol.asyncDispose === 'symbol') ll[Symbol.asyncDispose] = ll.stop;
  if (options.fakeTimers) {
    try {
      fake = processClock(options.fakeTimers, await now(), clock === 'wall');
    } catch (err) {
      await ll.stop();
      throw err;
    }
  }
  return ll;
}

module.exports = { startLimitlab, findBinary, LimitlabError, ReplyError, PLATFORMS };
