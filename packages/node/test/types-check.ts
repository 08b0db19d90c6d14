// Compiled with tsc --noEmit --strict by tests/packages/main.rs: the package's types as a user
// writes against them.
import { startLimitlab, findBinary, LimitlabError, type Limitlab, type StartOptions } from 'limitlab';

const options: StartOptions = { cluster: 3, clock: 'virtual', fakeTimers: true, at: 0 };

async function demo(): Promise<number> {
  const ll: Limitlab = await startLimitlab(options);
  const url: string = ll.url;
  const ports: number[] = ll.ports;
  const now: number = await ll.advance(1000);
  await ll.set(now + 5);
  await ll.flush();
  const reply = await ll.command('GET', 'k');
  if (typeof reply === 'string' || reply === null) void reply;
  await ll.stop();
  const bin: string = findBinary();
  return url.length + ports.length + bin.length;
}

try {
  void demo();
} catch (e) {
  if (e instanceof LimitlabError) throw e;
}

// @ts-expect-error: the clock is 'virtual' or 'wall'
void startLimitlab({ clock: 'fast' });
