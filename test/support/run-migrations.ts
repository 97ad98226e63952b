import { DataSource } from 'typeorm';
import { TestDatabase } from './database';

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
