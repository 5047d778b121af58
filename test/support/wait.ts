/**
 * Polls `probe` until it answers something truthy, for what a test cannot step: a process started or ended, a
 * message on its way. Polls every 20 ms; fails after `timeoutMs` naming what it waited for.
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 20_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}
