import { EntitySchema, EntitySchemaColumnOptions, EntitySchemaIndexOptions } from 'typeorm';
import { MessageStatus } from '../message/message-status';

/** The state-machine fields of an outbox or inbox row. */
export interface StateRecord {
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

/** The state-machine columns every outbox and inbox table has, after its own columns. */
export const STATE_COLUMNS: Record<string, EntitySchemaColumnOptions> = {
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
};

/** Names of the indexes the state machine needs on a table. */
export function stateIndexNames(table: string) {
  return { primaryKey: `PK_${table}`, claimable: `IDX_${table}_claimable`, processing: `IDX_${table}_processing` };
}

/**
 * The claim and reclaim indexes. Partial, so that their cost does not grow with retained
 * DONE history.
 */
export function stateIndices(table: string): EntitySchemaIndexOptions[] {
  const names = stateIndexNames(table);
  return [
    { name: names.claimable, columns: ['id'], where: `status IN ('PENDING', 'FAILED')` },
    { name: names.processing, columns: ['claimedAt'], where: `status = 'PROCESSING'` },
  ];
}

/**
 * One entity instance per table name: @nestjs/typeorm collects `autoLoadEntities` process-wide,
 * so a second app in the same process (e2e tests) must hand it the same object rather than a
 * twin that would be synchronised twice.
 */
export function memoiseByTable<T>(
  defaultTable: string,
  build: (tableName: string) => EntitySchema<T>,
): (tableName?: string) => EntitySchema<T> {
  const byTable = new Map<string, EntitySchema<T>>();
  return (tableName = defaultTable) => {
    let entity = byTable.get(tableName);
    if (!entity) {
      entity = build(tableName);
      byTable.set(tableName, entity);
    }
    return entity;
  };
}
