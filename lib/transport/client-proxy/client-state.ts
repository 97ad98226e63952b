/**
 * What the transport knows of its client's connection:
 * - `up`: connected, or not known to be otherwise (a client that was never connected is tried);
 * - `lost`: the connection is gone, or connecting failed; a successful `connect()` ends it;
 * - `blocked`: connected, but the broker refuses publishes (RabbitMQ's connection.blocked); only
 *   the client's own status ends it, as `connect()` succeeds throughout.
 */
export type ClientState = 'up' | 'lost' | 'blocked';

/** Statuses of Nest 11's clients (`NatsStatus`, `RedisStatus`, `RmqStatus`, `MqttStatus`, `TcpStatus`, `KafkaStatus`) by what they say of sending. */
const UP_STATUSES = new Set(['connected', 'unblocked']);
const LOST_STATUSES = new Set(['disconnected', 'reconnecting', 'closed']);
const BLOCKED_STATUS = 'blocked';

/**
 * The state after the client reported `status`. Statuses that say nothing about sending are
 * ignored: Kafka's `rebalancing`, `crashed` and `stopped` are its reply consumer's, not its
 * producer's, and a status this library does not know may come from a newer or custom client.
 */
export function stateAfterStatus(state: ClientState, status: string): ClientState {
  if (UP_STATUSES.has(status)) return 'up';
  if (LOST_STATUSES.has(status)) return 'lost';
  if (status === BLOCKED_STATUS) return 'blocked';
  return state;
}

/** The state after a `connect()` the transport made succeeded: it ends a loss, not a block. */
export function stateAfterConnected(state: ClientState): ClientState {
  return state === 'lost' ? 'up' : state;
}

/** First pause between two `connect()` probes of a lost client, doubled after each failure up to the next constant. */
export const FIRST_PROBE_DELAY_MS = 1_000;
export const MAX_PROBE_DELAY_MS = 30_000;

/** The pause before the probe after one that waited `previousMs` (0 for the first). */
export function nextProbeDelayMs(previousMs: number): number {
  return previousMs === 0 ? FIRST_PROBE_DELAY_MS : Math.min(previousMs * 2, MAX_PROBE_DELAY_MS);
}
