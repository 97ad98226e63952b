import { ListWindow, MessageFilter } from '../engine/state-table';
import { ListedMessage } from '../engine/message-views';
import { MessageScope } from './message-ref-sql';
import { filterConditions, FilterFlavour, SqlParams } from './message-filter-sql';

/** How a dialect selects a column so that the driver hands back what it can convert. */
export type SelectColumn = (column: string) => string;

/**
 * The `listMessages` statement: one page of rows matching `filter`, by id (a keyset). `id` is the
 * expression of the id column as the dialect reads it back; `time` selects a time column under its
 * own name.
 */
export function listMessagesSql(
  table: string,
  scope: MessageScope,
  filter: MessageFilter,
  window: ListWindow,
  params: SqlParams,
  flavour: FilterFlavour,
  select: { id: SelectColumn; time: SelectColumn },
): string {
  const times = ['created_at', 'processed_at', 'next_attempt_at'].map(select.time).join(', ');
  const ownColumns = scope ? scope : 'transport, destination';
  const conditions = filterConditions(filter, 'm.', params, flavour);
  const after = window.after === null ? '' : ` AND m.id ${window.newestFirst ? '<' : '>'} ${params.add(flavour.id(window.after))}`;
  // Ordered by `m.id`, the column: a bare `id` would name the selected id, text in some dialects.
  return `SELECT ${select.id('m.id')} AS id, message_id, message_type, biz_key, ordering_key, status, attempts, last_error, ${times}, ${ownColumns}
    FROM ${table} AS m WHERE ${conditions}${after}
    ORDER BY m.id ${window.newestFirst ? 'DESC' : 'ASC'} LIMIT ${params.add(window.limit)}`;
}

/** Times as each dialect converts them from what its driver returned. */
export type ListedTimes = Pick<ListedMessage, 'createdAt' | 'processedAt' | 'nextAttemptAt'>;

/** A row of `listMessagesSql`, with its id and times converted by the dialect. */
export function toListedMessage(row: Record<string, any>, scope: MessageScope, id: string, times: ListedTimes): ListedMessage {
  return {
    id,
    messageId: row.message_id,
    type: row.message_type,
    bizKey: row.biz_key,
    orderingKey: row.ordering_key,
    status: row.status,
    attempts: Number(row.attempts),
    lastError: row.last_error,
    ...times,
    ...(scope ? { consumer: row.consumer } : { transport: row.transport, destination: row.destination }),
  };
}
