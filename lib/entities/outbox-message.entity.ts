import { EntitySchema } from 'typeorm';
import { MessageStatus } from '../message/message-status';
import { DEFAULT_OUTBOX_TABLE } from '../options/table-names';

/** A row of the outbox table, as TypeORM maps it (for reading and operator tooling). */
export interface OutboxMessageRecord {
  id: string;
  messageId: string;
  messageType: string;
  bizKey: string | null;
  orderingKey: string | null;
  exchange: string;
  routingKey: string;
  payload: unknown;
  headers: Record<string, unknown>;
  status: MessageStatus;
  attempts: number;
  maxAttempts: number;
  nextAttemptAt: Date;
  claimedAt: Date | null;
  claimToken: string | null;
  claimedBy: string | null;
  lastError: string | null;
  createdAt: Date;
  processedAt: Date | null;
}

/** Names of the outbox table's indexes, shared by the entity and the migration so they agree. */
export function outboxIndexNames(table: string) {
  return {
    primaryKey: `PK_${table}`,
    messageId: `UQ_${table}_message_id`,
    typeBizKey: `UQ_${table}_type_biz_key`,
    claimable: `IDX_${table}_claimable`,
    processing: `IDX_${table}_processing`,
  };
}

const entitiesByTable = new Map<string, EntitySchema<OutboxMessageRecord>>();

/**
 * The outbox table's entity, one instance per table name: @nestjs/typeorm collects
 * `autoLoadEntities` process-wide, so a second app in the same process (e2e tests) must hand it
 * the same object rather than a twin that would be synchronised twice. Indexes serve the claim
 * and reclaim queries only and are partial, so their cost does not grow with retained DONE history.
 */
export function createOutboxMessageEntity(tableName: string = DEFAULT_OUTBOX_TABLE): EntitySchema<OutboxMessageRecord> {
  let entity = entitiesByTable.get(tableName);
  if (!entity) {
    entity = buildEntity(tableName);
    entitiesByTable.set(tableName, entity);
  }
  return entity;
}

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
      status: { type: 'varchar', length: 20 },
      attempts: { type: 'int', default: 0 },
      maxAttempts: { name: 'max_attempts', type: 'int' },
      nextAttemptAt: { name: 'next_attempt_at', type: 'timestamptz', default: () => 'now()' },
      claimedAt: { name: 'claimed_at', type: 'timestamptz', nullable: true },
      claimToken: { name: 'claim_token', type: 'uuid', nullable: true },
      claimedBy: { name: 'claimed_by', type: 'varchar', length: 200, nullable: true },
      lastError: { name: 'last_error', type: 'text', nullable: true },
      createdAt: { name: 'created_at', type: 'timestamptz', default: () => 'now()' },
      processedAt: { name: 'processed_at', type: 'timestamptz', nullable: true },
    },
    uniques: [
      { name: names.messageId, columns: ['messageId'] },
      // biz_key first: cancel(bizKey) without a type can use it too.
      { name: names.typeBizKey, columns: ['bizKey', 'messageType'] },
    ],
    indices: [
      { name: names.claimable, columns: ['id'], where: `status IN ('PENDING', 'FAILED')` },
      { name: names.processing, columns: ['claimedAt'], where: `status = 'PROCESSING'` },
    ],
  });
}

/** The entity for the default table name, for apps that list entities by hand. */
export const OutboxMessageEntity = createOutboxMessageEntity();
