/**
 * Runs `operation` from `concurrency` workers for `durationMs` and returns completed
 * operations per second.
 */
export async function closedLoopRate(concurrency: number, durationMs: number, operation: () => Promise<unknown>): Promise<number> {
  let completed = 0;
  const started = performance.now();
  const deadline = started + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        await operation();
        completed++;
      }
    }),
  );
  return completed / ((performance.now() - started) / 1000);
}
