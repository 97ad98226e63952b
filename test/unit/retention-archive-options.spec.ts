import { createArchiveTablesMigration, OutboxOptionsError } from '../../lib';
import { validateOutboxOptions } from '../../lib/options/validate-options';
import { IdentifierLimit, SchemaSql } from '../../lib/dialects/schema-sql';
import { archiveNames, TableKind } from '../../lib/naming/index-names';
import { mysqlSchemaSql } from '../../lib/dialects/mysql/mysql-schema';
import { describeMysqlServer } from '../../lib/dialects/mysql/mysql-server';
import { postgresSchemaSql } from '../../lib/dialects/postgres/postgres-schema';
import { sqliteSchemaSql } from '../../lib/dialects/sqlite/sqlite-schema';
import { tableNamesClash } from '../../lib/naming/table-names';
import { archiveShapeProblem } from '../../lib/schema/archive-tables-at-startup';
import { archiveColumns, TABLE_COLUMNS } from '../../lib/schema/table-columns';
import { longestTableName } from '../../lib/schema/table-name-limits';
import { optionProblems } from '../support/option-problems';

const DIALECTS: Record<string, SchemaSql> = {
  postgres: postgresSchemaSql,
  mariadb: mysqlSchemaSql(describeMysqlServer('10.11.19-MariaDB-0+deb12u1')),
  mysql: mysqlSchemaSql(describeMysqlServer('8.0.36')),
  sqlite: sqliteSchemaSql,
};
const KINDS: TableKind[] = ['outbox', 'inbox'];
const TABLES = { outbox: 'outbox_message', inbox: 'inbox_message' };

const measure = (name: string, limit: IdentifierLimit) => (limit.unit === 'bytes' ? Buffer.byteLength(name) : name.length);

describe('retentionMode', () => {
  it('deletes by default and accepts archive', () => {
    expect(validateOutboxOptions({}).retentionMode).toBe('delete');
    expect(validateOutboxOptions({ retentionMode: 'archive' }).retentionMode).toBe('archive');
  });

  it('names the option and the values it takes for anything else', () => {
    expect(optionProblems({ retentionMode: 'move' })).toEqual([`retentionMode must be 'delete' or 'archive', got "move"`]);
    expect(optionProblems({ retentionMode: 1 })).toEqual([`retentionMode must be 'delete' or 'archive', got 1`]);
  });
});

describe('Archive tables', () => {
  it.each(['postgres', 'mariadb', 'mysql'])('on %s: the archive of the longest table name allowed keeps every name whole', (database) => {
    const limit = DIALECTS[database].identifierLimit!;
    for (const kind of KINDS) {
      const names = Object.values(archiveNames('x'.repeat(longestTableName(kind, limit))));
      expect(Math.max(...names.map((name) => measure(name, limit)))).toBeLessThanOrEqual(limit.max);
    }
  });

  it.each(Object.keys(DIALECTS))('on %s: the DDL has the archive columns in order, and the names derived from the archived table', (database) => {
    for (const kind of KINDS) {
      const statements = DIALECTS[database].archiveTableDdl(kind, { table: TABLES[kind], quoted: `"${TABLES[kind]}_archive"`, ifNotExists: false });
      const columns = [...statements[0].matchAll(/^\s+["`](\w+)["`] \w/gm)].map((match) => match[1]);
      expect(columns).toEqual(archiveColumns(kind));
      expect(statements.join('\n')).toContain(archiveNames(TABLES[kind]).archivedAt);
      // No unique key but the archive's own: an id or a message id may be archived twice.
      expect(statements.join('\n')).not.toMatch(/UNIQUE/i);
    }
  });

  it('refuses table names one of whose archive would be the other table', () => {
    expect(tableNamesClash({ outbox: 'billing', inbox: 'billing_archive' })).toMatch(/would both use the name billing_archive/);
  });

  it('explains a missing archive table with the migration to run, and one of another shape', () => {
    expect(archiveShapeProblem('outbox', 'billing_outbox', [], { outbox: 'billing_outbox', inbox: 'billing_inbox' })).toBe(
      `retentionMode is 'archive' but the archive table "billing_outbox_archive" of the outbox table (tableName) does not exist: create it with` +
        ` createArchiveTablesMigration({ tableName: "billing_outbox", inboxTableName: "billing_inbox" }) in the DataSource's migrations,` +
        ` or let the module create it at start-up with the DataSource's synchronize: true`,
    );
    expect(archiveShapeProblem('inbox', 'inbox_message', ['id', 'note'], TABLES)).toMatch(
      /^the table "inbox_message_archive" exists but is not the archive of the inbox table \(inboxTableName\): it has no column archive_id, consumer/,
    );
    expect(archiveShapeProblem('inbox', 'inbox_message', [...archiveColumns('inbox'), 'note'], TABLES)).toBeUndefined();
  });

  it('keeps every column of the table, under its own key, with the time of archiving', () => {
    for (const kind of KINDS) expect(archiveColumns(kind)).toEqual(['archive_id', ...TABLE_COLUMNS[kind], 'archived_at']);
  });

  it('names its migration after both tables, and refuses a table name that is not an identifier', () => {
    expect(new (createArchiveTablesMigration())().name).toBe('CreateArchiveTables_outbox_message_inbox_message1798761600000');
    expect(() => createArchiveTablesMigration({ tableName: 'x; DROP TABLE y' })).toThrow(OutboxOptionsError);
  });
});
