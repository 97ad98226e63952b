import { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OutboxModuleOptionsInput } from '../../lib';
import { CapturingOutboxTransport } from '../../lib/testing';
import { TestDatabase } from './database';
import { createTestApp } from './test-app';

/**
 * Runs `migrations` on `database` as TypeORM's `migration:run` would, on a DataSource of its own
 * without `synchronize`; `revert` then undoes the last one, as `migration:revert` would.
 */
export async function runMigrations(database: TestDatabase, migrations: Function[], options: { revert?: boolean } = {}): Promise<void> {
  const dataSource = new DataSource({ ...database.dataSourceOptions(), synchronize: false, migrations });
  await dataSource.initialize();
  try {
    await dataSource.runMigrations();
    if (options.revert) await dataSource.undoLastMigration();
  } finally {
    await dataSource.destroy();
  }
}

/**
 * An app on `database`'s tables as migrations (or a test) left them: it neither creates nor
 * alters them (no `synchronize`), and sends into the test kit's capturing transport.
 */
export function createAppOnExistingTables(database: TestDatabase, outbox: OutboxModuleOptionsInput): Promise<INestApplicationContext> {
  return createTestApp({ database, dataSource: { synchronize: false }, statics: { transport: CapturingOutboxTransport }, outbox });
}
