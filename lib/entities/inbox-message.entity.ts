import { EntitySchema } from 'typeorm';
import { memoiseByTable, STATE_COLUMNS, stateIndexNames, stateIndices, StateRecord } from './state-columns';
import { DEFAULT_INBOX_TABLE } from '../options/table-names';

/** A row of the inbox table: one delivery of one message to one consumer. */
export interface InboxMessageRecord extends StateRecord {
  id: string;
  consumer: string;
  messageId: string;
  /** The AMQP `type`, '' when absent (so the bizKey key holds for untyped messages too). */
  messageType: string;
  bizKey: string | null;
  exchange: string;
  routingKey: string;
  /** The body exactly as received (text), so even a malformed one is kept for an operator. */
  payload: string;
  headers: Record<string, unknown>;
}

/** Names of the inbox table's constraints and indexes, shared by the entity and the migration. */
export function inboxIndexNames(table: string) {
  return { ...stateIndexNames(table), consumerMessageId: `UQ_${table}_consumer_message_id`, consumerBizKey: `UQ_${table}_consumer_biz_key` };
}

/**
 * The inbox table's entity, one instance per table name (see `memoiseByTable`).
 * Dedupe is per consumer: `(consumer, message_id)` and `(consumer, biz_key, message_type)` are
 * unique. Indexes serving claims are partial, as in the outbox.
 */
export const createInboxMessageEntity = memoiseByTable(DEFAULT_INBOX_TABLE, buildEntity);

function buildEntity(tableName: string): EntitySchema<InboxMessageRecord> {
  const names = inboxIndexNames(tableName);
  return new EntitySchema<InboxMessageRecord>({
    name: tableName === DEFAULT_INBOX_TABLE ? 'InboxMessage' : `InboxMessage_${tableName}`,
    tableName,
    columns: {
      id: { type: 'bigint', primary: true, generated: 'increment', primaryKeyConstraintName: names.primaryKey },
      consumer: { type: 'varchar', length: 200 },
      messageId: { name: 'message_id', type: 'varchar', length: 255 },
      messageType: { name: 'message_type', type: 'varchar', length: 255, default: '' },
      bizKey: { name: 'biz_key', type: 'varchar', length: 255, nullable: true },
      exchange: { type: 'varchar', length: 255 },
      routingKey: { name: 'routing_key', type: 'varchar', length: 255 },
      payload: { type: 'text' },
      headers: { type: 'json' },
      ...STATE_COLUMNS,
    },
    uniques: [
      { name: names.consumerMessageId, columns: ['consumer', 'messageId'] },
      { name: names.consumerBizKey, columns: ['consumer', 'bizKey', 'messageType'] },
    ],
    indices: stateIndices(tableName),
  });
}

/** The entity for the default table name. */
export const InboxMessageEntity = createInboxMessageEntity();
