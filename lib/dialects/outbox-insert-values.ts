import type { NewOutboxRow } from '../message/validate-message';

/**
 * The columns every dialect's outbox INSERT names, in this order: the message's own, then the
 * state a new message starts in (each dialect writes `status` as a literal and computes
 * `next_attempt_at` with its own clock).
 */
export const OUTBOX_INSERT_COLUMNS =
  'message_id, message_type, biz_key, ordering_key, transport, exchange, routing_key, destination, payload, headers, status, max_attempts, next_attempt_at';

/** The values of the message's own columns, the first ten of `OUTBOX_INSERT_COLUMNS`. */
export function messageColumnValues(row: NewOutboxRow): unknown[] {
  return [row.messageId, row.type, row.bizKey, row.orderingKey, row.transport, row.exchange, row.routingKey, row.destination, row.payload, row.headers];
}
