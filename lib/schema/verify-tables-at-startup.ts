import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DatabaseDialect } from '../dialects/database-dialect';
import { TableKind } from '../naming/index-names';
import { OutboxSchemaError } from '../errors';
import { TableNames } from '../naming/table-names';
import { isOutboxV1, LATEST_OUTBOX_VERSION, tableColumns, usableOutboxVersion, withQueryRunner } from './outbox-schema-version';
import { tableShapeProblem } from './table-shape';

/**
 * Fails the start-up, naming each table and what to do, when a table lacks the library's columns
 * or (without `synchronize`, which creates or upgrades it next) does not exist or is of an older
 * schema version: otherwise the first publish or claim would fail with a raw "column does not
 * exist", or dispatchers would log a missing table forever. Runs before start-up creation, which
 * must never add its indexes to a table of another shape. One catalog query per table. An outbox
 * table of version 2 or 3 where a later version changes something works as it is: that gets a
 * warning, not a failed start-up (under `synchronize` start-up creation upgrades it next).
 */
export async function verifyTablesAtStartup(dataSource: DataSource, dialect: DatabaseDialect, tables: TableNames): Promise<void> {
  const synchronizes = Boolean(dataSource.options.synchronize);
  const problems = await withQueryRunner(dataSource, async (runner) => {
    const found: string[] = [];
    for (const [kind, table] of [
      ['outbox', tables.outbox],
      ['inbox', tables.inbox],
    ] as [TableKind, string][]) {
      const columns = await tableColumns(runner, dialect, table);
      if (synchronizes && (columns.size === 0 || (kind === 'outbox' && isOutboxV1(columns)))) continue;
      const problem = tableShapeProblem(kind, table, [...columns]);
      if (problem) found.push(problem);
      else if (kind === 'outbox' && !synchronizes) {
        const version = await usableOutboxVersion(runner, dialect, table, columns);
        if (version < LATEST_OUTBOX_VERSION) new Logger('OutboxModule').warn(upgradeWarning(table, version));
      }
    }
    return found;
  });
  if (problems.length > 0) throw new OutboxSchemaError(problems);
}

/** What upgrading a usable outbox table of `version` brings, and the migration that does it (the next version is the one that changes something on its database). */
function upgradeWarning(table: string, version: number): string {
  return (
    `The outbox table ${table} is of schema version ${version}: ${UPGRADE_GAINS[version]}` +
    ` (createOutboxTableV${version + 1}Migration, in OUTBOX_MIGRATIONS, or \`nestjs-outbox migrate\`; docs/upgrading.md)`
  );
}

/** Why a usable table of each older version is worth upgrading. */
const UPGRADE_GAINS: Record<number, string> = {
  2: 'version 3 makes each message cheaper to claim and settle on PostgreSQL',
  3: 'version 4 makes each message cheaper to claim and settle on MySQL and MariaDB',
};
