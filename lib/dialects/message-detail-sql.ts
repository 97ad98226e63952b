import { MessageFilter, MessageRef } from '../engine/state-table';
import { MessageDetail } from '../engine/message-views';
import { filterConditions, FilterFlavour, SqlParams } from './message-filter-sql';
import { messageRefFilter, MessageScope } from './message-ref-sql';
import { StateTableFlavour } from './state-table-flavour';
import { SqlQuery } from './sql-query';

/** The time columns a message's detail shows, each selected under its own name. */
const DETAIL_TIMES = ['created_at', 'processed_at', 'next_attempt_at', 'claimed_at'];

/**
 * The statement reading one message whole (payload, headers and the claim columns besides what a
 * listing shows), by message id (and consumer, in the inbox).
 */
export function messageDetailSql(table: string, scope: MessageScope, ref: MessageRef, flavour: StateTableFlavour): SqlQuery {
  const filter = messageRefFilter(scope, ref, flavour.filter.placeholder);
  const time = flavour.selectTime ? (column: string) => flavour.selectTime!(column, column) : (column: string) => column;
  const ownColumns = scope ? scope : 'transport, destination';
  return {
    sql: `SELECT ${flavour.selectId('id')} AS id, message_id, message_type, biz_key, ordering_key, status, attempts, max_attempts, last_error,
             exchange, routing_key, payload, headers, claimed_by, ${DETAIL_TIMES.map(time).join(', ')}, ${ownColumns}
          FROM ${table} WHERE ${filter.sql}`,
    params: filter.params,
  };
}

/** A row of `messageDetailSql`; payload and headers as text, whatever type the driver returned them in. */
export function toMessageDetail(row: Record<string, any>, scope: MessageScope, readTime: (value: unknown) => Date | null): MessageDetail {
  return {
    id: String(row.id),
    messageId: row.message_id,
    type: row.message_type,
    bizKey: row.biz_key,
    orderingKey: row.ordering_key,
    status: row.status,
    attempts: Number(row.attempts),
    maxAttempts: Number(row.max_attempts),
    lastError: row.last_error,
    exchange: row.exchange,
    routingKey: row.routing_key,
    payload: storedText(row.payload),
    headers: storedText(row.headers),
    claimedBy: row.claimed_by,
    createdAt: readTime(row.created_at)!,
    processedAt: readTime(row.processed_at),
    nextAttemptAt: readTime(row.next_attempt_at)!,
    claimedAt: readTime(row.claimed_at),
    ...(scope ? { consumer: row.consumer } : { transport: row.transport, destination: row.destination }),
  };
}

/** A JSON column as text: PostgreSQL's driver parses `json` columns, the others hand back the text stored. */
function storedText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return JSON.stringify(value) ?? '';
}

/** The statement counting the rows `filter` selects: what a change would reach, before it runs. */
export function countMessagesSql(table: string, filter: MessageFilter, params: SqlParams, flavour: FilterFlavour): string {
  return `SELECT count(*) AS n FROM ${table} AS m WHERE ${filterConditions(filter, 'm.', params, flavour)}`;
}

/**
 * The statement counting, for each of `slices` equal slices of the last `windowMs` (newest
 * first, each cumulative from now), rows finished (DONE) and rows created in it: one scan of the
 * rows of the window, every time by the database's clock.
 */
export function recentActivitySql(table: string, windowMs: number, slices: number, params: SqlParams, flavour: StateTableFlavour): string {
  const since = (ms: number) => flavour.nowMinus(params.add(flavour.duration(ms)));
  const columns: string[] = [];
  for (let slice = 1; slice <= slices; slice++) {
    const ms = (windowMs * slice) / slices;
    columns.push(`SUM(CASE WHEN status = 'DONE' AND processed_at >= ${since(ms)} THEN 1 ELSE 0 END) AS done_${slice}`);
    columns.push(`SUM(CASE WHEN created_at >= ${since(ms)} THEN 1 ELSE 0 END) AS created_${slice}`);
  }
  return `SELECT ${columns.join(', ')} FROM ${table}
    WHERE (status = 'DONE' AND processed_at >= ${since(windowMs)}) OR created_at >= ${since(windowMs)}`;
}

/** Per-slice counts from `recentActivitySql`'s cumulative sums, oldest slice first. */
export function toSliceCounts(row: Record<string, any> | undefined, prefix: 'done' | 'created', slices: number): number[] {
  const cumulative = Array.from({ length: slices }, (_, index) => Number(row?.[`${prefix}_${index + 1}`] ?? 0));
  return cumulative.map((count, index) => count - (index === 0 ? 0 : cumulative[index - 1])).reverse();
}
