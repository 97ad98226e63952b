/** Polls `condition` until it holds, or fails after `timeoutMs` with `description`. */
export async function waitUntil(condition: () => Promise<boolean> | boolean, description: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${description}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
