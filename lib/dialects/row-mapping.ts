import { ExpiredClaim } from '../engine/state-table';
import { OutboxMessageState, ParkedKey } from '../engine/message-views';
import { StatusSummary } from '../engine/status-summary';
import { ClaimedInboxMessage } from './inbox-dialect';
import { ClaimedMessage } from './outbox-dialect';
import { attemptsColumn, jsonObjectColumn, maxAttemptsColumn, optionalTextColumn, textColumn, timeColumn } from './unreadable-row';

/*
 * Rows turned into the objects the engine works with, written once for all dialects. Only what
 * reads the same on every database is mapped here: ids and times come in each driver's own types,
 * so each dialect converts those itself and passes the results in.
 */

/** A row as the driver returns it (untyped), its columns named as every dialect selects them. */
type SelectedRow = Record<string, any>;

/** What a claimed row of either table carries: the message as the transport sends it or a handler gets it. */
type ClaimedFields = Omit<ClaimedMessage, 'transport' | 'destination' | 'bizKey' | 'createdAt'>;

/**
 * Every column checked as it is read: a value the library never writes throws an
 * `UnreadableRowError` naming the column, which sets that row aside (see `readClaimedRows`).
 */
function claimedFields(row: SelectedRow, id: string, claimToken: string): ClaimedFields {
  return {
    id,
    claimToken,
    attempts: attemptsColumn(row, 'attempts'),
    maxAttempts: maxAttemptsColumn(row, 'max_attempts'),
    orderingKey: optionalTextColumn(row, 'ordering_key'),
    messageId: textColumn(row, 'message_id'),
    type: textColumn(row, 'message_type'),
    exchange: textColumn(row, 'exchange'),
    routingKey: textColumn(row, 'routing_key'),
    payload: textColumn(row, 'payload'),
    headers: jsonObjectColumn(row, 'headers'),
  };
}

/*
 * Each table's own fields are assigned to the shared literal rather than spread into a new one:
 * V8 adds the properties that follow a spread one by one, the slow way, and on the dispatch path
 * that was the largest single cost per message (see docs/performance.md).
 */

/**
 * `converted` may also carry the claim token and the transport, where the claim knows them and
 * does not select them per row.
 */
export function toClaimedMessage(
  row: SelectedRow,
  converted: Pick<ClaimedMessage, 'id' | 'createdAt'> & Partial<Pick<ClaimedMessage, 'claimToken' | 'transport'>>,
): ClaimedMessage {
  const message = claimedFields(row, converted.id, converted.claimToken ?? row.claim_token) as ClaimedMessage;
  message.transport = converted.transport ?? textColumn(row, 'transport');
  message.destination = textColumn(row, 'destination');
  message.bizKey = row.biz_key == null ? null : textColumn(row, 'biz_key');
  message.createdAt = timeColumn(converted.createdAt, 'created_at');
  return message;
}

export function toClaimedInboxMessage(row: SelectedRow, converted: Pick<ClaimedInboxMessage, 'id'>): ClaimedInboxMessage {
  const message = claimedFields(row, converted.id, row.claim_token) as ClaimedInboxMessage;
  message.consumer = textColumn(row, 'consumer');
  return message;
}

export function toOutboxMessageState(row: SelectedRow, converted: Pick<OutboxMessageState, 'createdAt' | 'processedAt'>): OutboxMessageState {
  return {
    messageId: row.message_id,
    type: row.message_type,
    bizKey: row.biz_key,
    orderingKey: row.ordering_key,
    status: row.status,
    attempts: row.attempts,
    lastError: row.last_error,
    createdAt: converted.createdAt,
    processedAt: converted.processedAt,
  };
}

export function toExpiredClaim(row: SelectedRow, converted: Pick<ExpiredClaim, 'id'>): ExpiredClaim {
  return {
    id: converted.id,
    claimToken: row.claim_token,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    orderingKey: row.ordering_key,
    claimedBy: row.claimed_by,
    lastError: row.last_error,
  };
}

export function toParkedKey(row: SelectedRow): ParkedKey {
  return {
    orderingKey: row.ordering_key,
    // Selected as `scope`: the consumer in the inbox, NULL in the outbox.
    consumer: row.scope,
    // Selected only from the outbox, whose rows name their transport.
    transport: row.transport ?? null,
    messageId: row.message_id,
    type: row.message_type,
    attempts: row.attempts,
    lastError: row.last_error,
    // A count, which some drivers return as text.
    waiting: Number(row.waiting),
  };
}

/**
 * The rows of `statusSummarySql`, times converted by `toDate` (each driver returns its own). An
 * empty table gives one row with the clock and no group.
 */
export function toStatusSummary(rows: SelectedRow[], toDate: (value: any) => Date | null): StatusSummary {
  return {
    at: toDate(rows[0].db_now)!,
    groups: rows
      .filter((row) => row.status !== null)
      .map((row) => ({
        scope: row.scope ?? null,
        status: row.status,
        // Counts and sums, which some drivers return as text.
        count: Number(row.n),
        due: Number(row.due),
        oldestDueAt: toDate(row.oldest_due),
      })),
  };
}
