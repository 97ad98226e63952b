import { TableKind } from '../dialects/index-names';

/** The state-machine columns both tables share. */
const STATE_COLUMNS = ['status', 'attempts', 'max_attempts', 'next_attempt_at', 'claimed_at', 'claim_token', 'claimed_by', 'last_error', 'created_at', 'processed_at'];

/**
 * The columns the library reads and writes, per table, as every dialect's DDL creates them. A
 * table lacking any of them is not one of the library's (or is of an older schema version).
 */
export const TABLE_COLUMNS: Record<TableKind, readonly string[]> = {
  outbox: [
    'id', 'message_id', 'message_type', 'biz_key', 'ordering_key', 'exchange', 'routing_key', 'payload', 'headers', ...STATE_COLUMNS,
    // Schema version 2.
    'transport', 'destination',
  ],
  inbox: ['id', 'consumer', 'message_id', 'message_type', 'biz_key', 'ordering_key', 'exchange', 'routing_key', 'payload', 'headers', ...STATE_COLUMNS],
};
