/**
 * Longest a start-up may take: a child process printing READY, an application's init. Start-ups
 * measure nothing, and a child that compiles the library with ts-node on a loaded 2-core machine
 * has been seen to need more than 30 s.
 */
export const STARTUP_TIMEOUT_MS = 120_000;

/**
 * Longest to wait for what takes a second or two on a quiet machine: a delivery, a row reaching
 * a status. A wait that ends early costs nothing; one that runs out is a failure, so it is sized
 * for a loaded machine.
 */
export const WAIT_TIMEOUT_MS = 60_000;

/** Room in a jest timeout for what a test does besides its bounded waits (queries, publishing, closing). */
const UNBOUNDED_WORK_MS = 60_000;

/**
 * A jest timeout for a test or hook whose bounded waits, one after another, take at most
 * `waitsMs`: larger than their sum, so that a wait that runs out fails with its own message
 * rather than jest's "Exceeded timeout".
 */
export function timeoutFor(...waitsMs: number[]): number {
  return waitsMs.reduce((sum, ms) => sum + ms, UNBOUNDED_WORK_MS);
}

/**
 * A time budget that several waits in a row share, so that a loop of short waits is bounded as a
 * whole: pass the returned function's value as each wait's timeout.
 */
export function budget(totalMs: number): () => number {
  const end = Date.now() + totalMs;
  return () => Math.max(0, end - Date.now());
}

/** Polls `condition` until it holds, or fails after `timeoutMs` with `description`. */
export async function waitUntil(condition: () => Promise<boolean> | boolean, description: string, timeoutMs = WAIT_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${description}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** For a clock that must pass, never for "nothing else happened" (see QueueProbe.flush). */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
