import { EntitySchema } from 'typeorm';
import { memoiseByTable, STATE_COLUMNS, stateIndexNames, stateIndices, StateRecord } from './state-columns';
import { DEFAULT_OUTBOX_TABLE } from '../options/table-names';

/** A row of the outbox table, as TypeORM maps it (for reading and operator tooling). */
export interface OutboxMessageRecord extends StateRecord {
  id: string;
  messageId: string;
  messageType: string;
  bizKey: string | null;
  orderingKey: string | null;
  exchange: string;
  routingKey: string;
  payload: unknown;
  headers: Record<string, unknown>;
}

/** Names of the outbox table's indexes, shared by the entity and the migration so they agree. */
export function outboxIndexNames(table: string) {
  return { ...stateIndexNames(table), messageId: `UQ_${table}_message_id`, typeBizKey: `UQ_${table}_type_biz_key` };
}

/**
 * The outbox table's entity, one instance per table name (see `memoiseByTable`). Unique keys
 * make publishing idempotent; indexes serve the claim and reclaim queries only.
 */
export const createOutboxMessageEntity = memoiseByTable(DEFAULT_OUTBOX_TABLE, buildEntity);

function buildEntity(tableName: string): EntitySchema<OutboxMessageRecord> {
  const names = outboxIndexNames(tableName);
  return new EntitySchema<OutboxMessageRecord>({
    name: tableName === DEFAULT_OUTBOX_TABLE ? 'OutboxMessage' : `OutboxMessage_${tableName}`,
    tableName,
    columns: {
      id: { type: 'bigint', primary: true, generated: 'increment', primaryKeyConstraintName: names.primaryKey },
      messageId: { name: 'message_id', type: 'uuid' },
      messageType: { name: 'message_type', type: 'varchar', length: 255 },
      bizKey: { name: 'biz_key', type: 'varchar', length: 255, nullable: true },
      orderingKey: { name: 'ordering_key', type: 'varchar', length: 255, nullable: true },
      exchange: { type: 'varchar', length: 255 },
      routingKey: { name: 'routing_key', type: 'varchar', length: 255 },
      payload: { type: 'json' },
      headers: { type: 'json' },
      ...STATE_COLUMNS,
    },
    uniques: [
      { name: names.messageId, columns: ['messageId'] },
      // biz_key first: cancel(bizKey) without a type can use it too.
      { name: names.typeBizKey, columns: ['bizKey', 'messageType'] },
    ],
    indices: stateIndices(tableName),
  });
}

/** The entity for the default table name, for apps that list entities by hand. */
export const OutboxMessageEntity = createOutboxMessageEntity();
