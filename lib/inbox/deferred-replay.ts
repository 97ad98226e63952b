/**
 * Runs the rest of a deferred handler's chain (pipes, later interceptors, the business method),
 * which `runRest` starts, in the worker's transaction that settles the row.
 */
export type DeferredReplay = (runRest: () => Promise<unknown>) => Promise<unknown>;

/** Messages the deferred worker rebuilt from stored rows, each with the replay of its row. */
const replays = new WeakMap<object, DeferredReplay>();

/**
 * Marks `message` as a deferred row being run: when the handler chain reaches the inbox
 * interceptor with it, the interceptor hands the rest of the chain to `replay` instead of storing
 * the delivery. Only the worker's own message objects are marked, so nothing from the wire can
 * pass for a replay.
 */
export function registerReplay(message: object, replay: DeferredReplay): void {
  replays.set(message, replay);
}

/** The replay registered for `message`, taken so that it runs once. */
export function takeReplay(message: unknown): DeferredReplay | undefined {
  if (!message || typeof message !== 'object') return undefined;
  const replay = replays.get(message);
  if (replay) replays.delete(message);
  return replay;
}
