import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DatabaseDialect } from '../dialects/database-dialect';
import { TableKind } from '../naming/index-names';
import { OutboxSchemaError } from '../errors';
import { TableNames } from '../naming/table-names';
import { isOutboxV1, isOutboxV3Pending, tableColumns, withQueryRunner } from './outbox-schema-version';
import { tableShapeProblem } from './table-shape';

/**
 * Fails the start-up, naming each table and what to do, when a table lacks the library's columns
 * or (without `synchronize`, which creates or upgrades it next) does not exist or is of an older
 * schema version: otherwise the first publish or claim would fail with a raw "column does not
 * exist", or dispatchers would log a missing table forever. Runs before start-up creation, which
 * must never add its indexes to a table of another shape. One catalog query per table. An outbox
 * table of version 2 where version 3 changes something works as it is: that gets a warning, not
 * a failed start-up (under `synchronize` start-up creation upgrades it next).
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
      else if (kind === 'outbox' && !synchronizes && (await isOutboxV3Pending(runner, dialect, table, columns))) {
        new Logger('OutboxModule').warn(
          `The outbox table ${table} is of schema version 2: version 3 makes each message cheaper to claim and settle on PostgreSQL` +
            ' (createOutboxTableV3Migration, in OUTBOX_MIGRATIONS, or `nestjs-outbox migrate`; docs/upgrading.md)',
        );
      }
    }
    return found;
  });
  if (problems.length > 0) throw new OutboxSchemaError(problems);
}
