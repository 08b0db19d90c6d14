// Types of the limitlab package (index.js, index.mjs).

/** Controls of a runner's fake timers, which the test has enabled: Vitest's `vi`, Jest's `jest`,
 * node:test's `mock.timers`, or a clock from @sinonjs/fake-timers. */
export type TimerControls =
  | { setSystemTime(now: number | Date): unknown; advanceTimersByTime(ms: number): unknown; advanceTimersByTimeAsync?(ms: number): Promise<unknown> }
  | { setTime(ms: number): unknown; tick(ms: number): unknown }
  | { setSystemTime(now: number | Date): unknown; tick(ms: number): unknown; tickAsync?(ms: number): Promise<unknown> };

/** Options of @sinonjs/fake-timers' `install` (`now` is the server's time; `toFake` defaults to
 * `['Date']`, `shouldAdvanceTime` to true on the wall clock). */
export interface SinonInstallOptions {
  toFake?: string[];
  shouldAdvanceTime?: boolean;
  advanceTimeDelta?: number;
  loopLimit?: number;
  shouldClearNativeTimers?: boolean;
  [option: string]: unknown;
}

export interface StartOptions {
  /** Answer as a Redis Cluster of this many masters (`--cluster N`), each on its own port. */
  cluster?: number;
  /** `'virtual'` (default): time moves only with advance/set. `'wall'`: it follows the machine's
   * clock, and advance/set jump it. */
  clock?: 'virtual' | 'wall';
  /** The virtual clock's start, unix ms (default 2024-01-01T00:00:00Z). */
  at?: number;
  /** Move this process's clock with the server's: `true` installs @sinonjs/fake-timers (Date only),
   * an object of sinon's install options does the same with those, or a runner's timer controls
   * (`vi`, `jest`, `mock.timers`) are set to the server's time and advanced with it. */
  fakeTimers?: true | SinonInstallOptions | TimerControls;
  /** `--requirepass`: every connection must AUTH first (the URLs carry it). */
  requirepass?: string;
  /** More arguments for `limitlab serve`. */
  args?: string[];
  /** The binary (default: `$LIMITLAB_BIN`, else the platform package's). */
  binary?: string;
  /** How long to wait for the server's first line (default 30000). */
  startupTimeoutMs?: number;
}

/** A RESP2 reply: status and bulk strings as strings, integers as numbers, arrays, null. */
export type Reply = string | number | null | Reply[];

export interface Limitlab {
  /** `redis://host:port` of the first node (a cluster client discovers the others from it). */
  readonly url: string;
  /** One URL per node. */
  readonly urls: string[];
  readonly host: string;
  /** The first node's port. */
  readonly port: number;
  /** Every node's port. */
  readonly ports: number[];
  /** The server's process id. */
  readonly pid: number;
  readonly clockMode: 'virtual' | 'wall';
  /** Whether the server is running (not stopped, not exited). */
  readonly running: boolean;
  /** Whether this process's clock moves with the server's (`fakeTimers`). */
  readonly followsProcess: boolean;
  /** The server's time, unix ms (`CLOCK.GET`). */
  now(): Promise<number>;
  /** Moves the server's clock (and the process's, with `fakeTimers`) forward; the new time. */
  advance(ms: number): Promise<number>;
  /** Sets the server's clock (and the process's, with `fakeTimers`); the new time. */
  set(unixMs: number): Promise<number>;
  /** FLUSHALL on every node. */
  flush(): Promise<void>;
  /** Sends one command to the first node. */
  command(...args: Array<string | number | Uint8Array>): Promise<Reply>;
  /** Sends one command to node `node` (0-based, in `ports` order). */
  commandOn(node: number, ...args: Array<string | number | Uint8Array>): Promise<Reply>;
  /** What the server wrote to stderr (its last 64 KiB). */
  log(): string;
  /** Stops the server (it exits by itself if this process dies first) and restores the real clock. */
  stop(): Promise<void>;
}

/** Starts `limitlab serve --port 0` and resolves once it listens. */
export function startLimitlab(options?: StartOptions): Promise<Limitlab>;

/** The limitlab executable: `$LIMITLAB_BIN`, else the platform package's. */
export function findBinary(): string;

export class LimitlabError extends Error {}
export class ReplyError extends Error {}

/** Platform packages by `${process.platform}-${process.arch}`. */
export const PLATFORMS: Readonly<Record<string, string>>;
