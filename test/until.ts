/** Polls `check` until it returns a value, or fails at the deadline with the last reason. */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined>,
  deadlineMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what}: not within ${deadlineMs} ms (${String(last ?? 'no value')})`);
}
