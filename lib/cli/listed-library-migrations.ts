import { DataSource } from 'typeorm';
import { TableKind } from '../naming/index-names';
import { CREATING_MIGRATION_LABEL } from '../schema/table-migrations';

/**
 * The name of the library's migration creating `table` when the DataSource lists it in its
 * `migrations`. Such a migration's CREATE TABLE fails on a table made another way, so a table
 * it creates must be left to it.
 */
export function listedCreatingMigration(dataSource: DataSource, kind: TableKind, table: string): string | undefined {
  const name = new RegExp(`^${CREATING_MIGRATION_LABEL[kind]}_${table}\\d+$`);
  return dataSource.migrations.map((migration) => migration.name).find((migrationName) => migrationName !== undefined && name.test(migrationName));
}
