import type { DataSource } from 'typeorm';
import type { StandbyGate } from '../engine/standby-gate';
import { OutboxOptionsError } from '../errors';
import { resolveAwaitStandby } from '../options/await-standby';
import type { OutboxModuleOptions } from '../options/outbox-module-options';
import type { DatabaseDialect } from './database-dialect';

/**
 * The gate `awaitStandby` asks for, or null when it is off. Refuses the start-up on a database
 * whose standbys the library cannot ask, rather than send unguarded what the user asked to guard.
 */
export function standbyGateFor(dialect: DatabaseDialect, workerDataSource: DataSource, options: OutboxModuleOptions): StandbyGate | null {
  if (!options.awaitStandby) return null;
  if (!dialect.standbyGate) {
    throw new OutboxOptionsError([
      `awaitStandby needs PostgreSQL (streaming replication); this DataSource is ${dialect.description}: remove the option, or use synchronous replication of your database instead`,
    ]);
  }
  return dialect.standbyGate(workerDataSource, resolveAwaitStandby(options.awaitStandby));
}
