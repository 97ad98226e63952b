import { TableKind } from '../naming/index-names';

/** The state-machine columns both tables share. */
const STATE_COLUMNS = [
  'status',
  'attempts',
  'max_attempts',
  'next_attempt_at',
  'claimed_at',
  'claim_token',
  'claimed_by',
  'last_error',
  'created_at',
  'processed_at',
];

/** The columns schema version 2 added to the outbox table: a table without them is of version 1. */
export const OUTBOX_V2_COLUMNS: readonly string[] = ['transport', 'destination'];

/**
 * The columns the library reads and writes, per table, as every dialect's DDL creates them. A
 * table lacking any of them is not one of the library's (or is of an older schema version).
 */
export const TABLE_COLUMNS: Record<TableKind, readonly string[]> = {
  outbox: [
    'id',
    'message_id',
    'message_type',
    'biz_key',
    'ordering_key',
    'exchange',
    'routing_key',
    'payload',
    'headers',
    ...STATE_COLUMNS,
    ...OUTBOX_V2_COLUMNS,
  ],
  inbox: ['id', 'consumer', 'message_id', 'message_type', 'biz_key', 'ordering_key', 'exchange', 'routing_key', 'payload', 'headers', ...STATE_COLUMNS],
};

/**
 * The columns of the archive of a table of `kind`: a key of its own (an id archived again, as
 * when a row copied back is finished anew, is a second archive row, never a conflict that would
 * stop retention), every column of the table, and when the row was archived.
 */
export function archiveColumns(kind: TableKind): readonly string[] {
  return ['archive_id', ...TABLE_COLUMNS[kind], 'archived_at'];
}
