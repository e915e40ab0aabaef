/**
 * Polls `cond` until it holds. Specs wait on states, never on fixed sleeps: this returns
 * as soon as the state is reached and fails with `what` when it never is.
 */
export async function until(cond: () => boolean | Promise<boolean>, what = 'condition', timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}
