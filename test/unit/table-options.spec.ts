import { OutboxModule, OutboxOptionsError } from '../../lib';
import { OutboxTransport } from '../../lib/entries/transports';
import { validateOutboxOptions } from '../../lib/options/validate-options';
import { IdentifierLimit, SchemaSql, TableDdl } from '../../lib/dialects/schema-sql';
import { derivedNames, longestDerivedName, TableKind } from '../../lib/naming/index-names';
import { mysqlSchemaSql } from '../../lib/dialects/mysql/mysql-schema';
import { describeMysqlServer } from '../../lib/dialects/mysql/mysql-server';
import { postgresSchemaSql } from '../../lib/dialects/postgres/postgres-schema';
import { sqliteSchemaSql } from '../../lib/dialects/sqlite/sqlite-schema';
import { staticOptionProblems } from '../../lib/options/validate-static-options';
import { isOutboxV1 } from '../../lib/schema/outbox-schema-version';
import { OUTBOX_V2_COLUMNS, TABLE_COLUMNS } from '../../lib/schema/table-columns';
import { assertTableNamesFit, longestTableName, tableNameLengthProblem } from '../../lib/schema/table-name-limits';
import { tableShapeProblem } from '../../lib/schema/table-shape';

const DIALECTS: Record<string, SchemaSql> = {
  postgres: postgresSchemaSql,
  mariadb: mysqlSchemaSql(describeMysqlServer('10.11.19-MariaDB-0+deb12u1')),
  mysql: mysqlSchemaSql(describeMysqlServer('8.0.36')),
  sqlite: sqliteSchemaSql,
};

/** How long a table name may be, per database and table kind. */
const LONGEST = {
  postgres: { outbox: 47, inbox: 40 },
  mariadb: { outbox: 48, inbox: 41 },
  mysql: { outbox: 48, inbox: 41 },
  sqlite: { outbox: 63, inbox: 63 },
};

const KINDS: TableKind[] = ['outbox', 'inbox'];

/** The byte or character length of an identifier, as the database of `limit` measures it. */
const measure = (name: string, limit: IdentifierLimit) => (limit.unit === 'bytes' ? Buffer.byteLength(name) : name.length);

class GoodTransport implements OutboxTransport {
  async send(): Promise<void> {}
}

describe('Table name limits per database', () => {
  it.each(Object.keys(LONGEST) as (keyof typeof LONGEST)[])('on %s: outbox and inbox table names up to the lengths their index names allow', (database) => {
    const limit = DIALECTS[database].identifierLimit;
    expect({ outbox: longestTableName('outbox', limit), inbox: longestTableName('inbox', limit) }).toEqual(LONGEST[database]);
  });

  it.each(['postgres', 'mariadb', 'mysql'])(
    'on %s: every derived name of the longest table name fits, and one of a name a character longer does not',
    (database) => {
      const limit = DIALECTS[database].identifierLimit!;
      for (const kind of KINDS) {
        const longest = longestTableName(kind, limit);
        expect(Math.max(...derivedNames(kind, 'x'.repeat(longest)).map((name) => measure(name, limit)))).toBe(limit.max);
        expect(Math.max(...derivedNames(kind, 'x'.repeat(longest + 1)).map((name) => measure(name, limit)))).toBe(limit.max + 1);
      }
    },
  );

  it('names the longest derived name of each kind', () => {
    expect(longestDerivedName('outbox')).toEqual({ pattern: 'UQ_<name>_type_biz_key', extraLength: 16 });
    expect(longestDerivedName('inbox')).toEqual({ pattern: 'UQ_<name>_consumer_message_id', extraLength: 23 });
  });

  it('refuses a name one character over, saying the option, the limit for that kind on that database, and why', () => {
    const limit = DIALECTS.mariadb.identifierLimit;
    expect(tableNameLengthProblem('inbox', 'i'.repeat(41), limit)).toBeUndefined();
    expect(tableNameLengthProblem('inbox', 'i'.repeat(42), limit)).toBe(
      `inboxTableName "${'i'.repeat(42)}" has 42 characters, but on MariaDB an inbox table name may have at most 41:` +
        ' its longest index name, UQ_<name>_consumer_message_id, adds 23, and MariaDB identifiers have at most 64 characters' +
        ' (MariaDB refuses longer identifiers, so creating the table would fail). Choose a shorter inboxTableName',
    );
    expect(tableNameLengthProblem('outbox', 'o'.repeat(48), DIALECTS.postgres.identifierLimit)).toMatch(
      /^tableName "o{48}" has 48 characters, but on PostgreSQL an outbox table name may have at most 47: .* at most 63 bytes \(PostgreSQL truncates/,
    );
  });

  it('reports both tables at once, as OutboxOptionsError', () => {
    const tables = { outbox: 'o'.repeat(50), inbox: 'i'.repeat(50) };
    expect(() => assertTableNamesFit(DIALECTS.postgres.identifierLimit, tables)).toThrow(OutboxOptionsError);
    try {
      assertTableNamesFit(DIALECTS.postgres.identifierLimit, tables);
    } catch (error) {
      expect((error as OutboxOptionsError).problems).toEqual([expect.stringMatching(/^tableName /), expect.stringMatching(/^inboxTableName /)]);
    }
    expect(() => assertTableNamesFit(DIALECTS.sqlite.identifierLimit, tables)).not.toThrow();
  });
});

describe('Static options', () => {
  it('accepts the defaults and distinct plain names', () => {
    expect(staticOptionProblems({})).toEqual([]);
    expect(
      staticOptionProblems({
        tableName: 'billing_outbox',
        inboxTableName: 'billing_inbox',
        transport: GoodTransport,
        dataSourceName: 'billing',
        isGlobal: false,
      }),
    ).toEqual([]);
  });

  it('refuses equal table names, ignoring case, and says why', () => {
    expect(staticOptionProblems({ tableName: 'events', inboxTableName: 'events' })).toEqual([
      expect.stringMatching(/^tableName and inboxTableName must name two tables, but both are "events"/),
    ]);
    expect(staticOptionProblems({ tableName: 'Events', inboxTableName: 'events' })).toEqual([expect.stringMatching(/compared ignoring case/)]);
    expect(staticOptionProblems({ inboxTableName: 'OUTBOX_MESSAGE' })).toEqual([expect.stringMatching(/both are "outbox_message"/)]);
  });

  it('refuses names whose derived index names overlap', () => {
    // The outbox's UQ_<t>_message_id of `foo_consumer` is the inbox's UQ_<t>_consumer_message_id of `foo`.
    expect(staticOptionProblems({ tableName: 'foo_consumer', inboxTableName: 'foo' })).toEqual([
      expect.stringMatching(/^tableName "foo_consumer" and inboxTableName "foo" would both use the name UQ_foo_consumer_message_id/),
    ]);
    expect(staticOptionProblems({ tableName: 'orders_outbox', inboxTableName: 'PK_orders_outbox' })).toEqual([
      expect.stringMatching(/would both use the name PK_orders_outbox/),
    ]);
  });

  it('refuses a transport that is not a transport class, saying what was given', () => {
    const problem = (transport: unknown) => staticOptionProblems({ transport: transport as never });
    expect(problem(new GoodTransport())).toEqual([
      expect.stringMatching(/^transport must be a class .*got an instance of GoodTransport: pass the class itself \(transport: GoodTransport\)/),
    ]);
    expect(problem('rabbitmq')).toEqual([expect.stringMatching(/^transport must be a class .*got the string "rabbitmq"/)]);
    expect(problem({ send: async () => undefined })).toEqual([expect.stringMatching(/got an object: declare a class/)]);
    expect(problem(async () => undefined)).toEqual([expect.stringMatching(/got a function that is not a class/)]);
    expect(problem(class NoSend {})).toEqual([expect.stringMatching(/class NoSend has no send\(\) method/)]);
    expect(problem(null)).toEqual([expect.stringMatching(/got null/)]);
  });

  it('reports every bad static option at once', () => {
    expect(staticOptionProblems({ tableName: 'a b', transport: 'x' as never, dataSourceName: '', isGlobal: 'yes' as never })).toEqual([
      expect.stringMatching(/^tableName must be a plain SQL identifier/),
      expect.stringMatching(/^transport must be a class/),
      expect.stringMatching(/^dataSourceName must be/),
      expect.stringMatching(/^isGlobal must be true or false/),
    ]);
  });

  it("fails in OutboxModule.forRoot() and forRootAsync() themselves, with the runtime options' problems beside", () => {
    expect(() => OutboxModule.forRoot({ tableName: 'events', inboxTableName: 'events', batchSize: 0 })).toThrow(
      /Invalid OutboxModule options: tableName and inboxTableName must name two tables.*; batchSize must not be less than 1/,
    );
    expect(() => OutboxModule.forRootAsync({ useFactory: () => ({}), transport: new GoodTransport() as never })).toThrow(OutboxOptionsError);
    expect(() => OutboxModule.forRootAsync({ useFactory: () => ({}), tableName: 'x'.repeat(64) })).toThrow(/tableName must be a plain SQL identifier/);
  });

  it('tells a static option returned by an async factory where it belongs', () => {
    expect(() => validateOutboxOptions({ tableName: 'billing_outbox' } as never)).toThrow(
      /tableName shapes the module, so it cannot come from an async factory: pass it to OutboxModule\.forRootAsync\(\{ tableName, useFactory \}\)/,
    );
  });
});

describe('Table shape', () => {
  it('finds nothing wrong with a table that has every column, in any case, and more', () => {
    expect(tableShapeProblem('outbox', 'outbox_message', [...TABLE_COLUMNS.outbox.map((c) => c.toUpperCase()), 'tenant_id'])).toBeUndefined();
  });

  it('says how to create a missing table', () => {
    expect(tableShapeProblem('outbox', 'billing_outbox', [])).toMatch(
      /^the outbox table "billing_outbox" \(tableName\) does not exist: create it with the library's migrations \(OUTBOX_MIGRATIONS, or createOutboxTableMigration\("billing_outbox"\) .*synchronize: true/,
    );
    expect(tableShapeProblem('inbox', 'billing_inbox', [])).toMatch(/\(inboxTableName\) does not exist: .*createInboxTableMigration\("billing_inbox"\)/);
  });

  it('names the missing columns of a table of another shape', () => {
    expect(tableShapeProblem('outbox', 'orders', ['id', 'status', 'customer'])).toBe(
      `the table "orders" (tableName) exists but is not an outbox table: it has no column ${TABLE_COLUMNS.outbox.filter((c) => c !== 'id' && c !== 'status').join(', ')}.` +
        " If it is a table of your own, set tableName to another name; if it is an outbox table of an older version, run the library's migrations",
    );
  });

  it('takes only an outbox table of version 1 for one to upgrade: never an inbox table, a business table or version 2', () => {
    const version1 = TABLE_COLUMNS.outbox.filter((c) => !OUTBOX_V2_COLUMNS.includes(c));
    expect(isOutboxV1(new Set(version1))).toBe(true);
    expect(isOutboxV1(new Set(TABLE_COLUMNS.outbox))).toBe(false);
    // The inbox has every version-1 outbox column too: tableName: 'inbox_message' must not alter it.
    expect(isOutboxV1(new Set(TABLE_COLUMNS.inbox))).toBe(false);
    expect(isOutboxV1(new Set(['id', 'status', 'customer']))).toBe(false);
    expect(isOutboxV1(new Set())).toBe(false);
  });

  it('says how to upgrade an outbox table of schema version 1', () => {
    const version1 = TABLE_COLUMNS.outbox.filter((c) => !OUTBOX_V2_COLUMNS.includes(c));
    expect(tableShapeProblem('outbox', 'orders_outbox', version1)).toMatch(
      /^the outbox table "orders_outbox" \(tableName\) is of schema version 1 \(no column transport, destination\): .*createOutboxTableV2Migration\("orders_outbox"\).*synchronize: true/,
    );
  });

  /** The column names a CREATE TABLE statement declares (quoted names at the start of a line), or an ALTER TABLE adds. */
  const declaredColumns = (ddl: string[]) =>
    ddl.flatMap((statement) => [...statement.matchAll(/^\s*(?:ALTER TABLE .* )?(?:ADD COLUMN (?:IF NOT EXISTS )?)?["`](\w+)["`] \w/gm)].map((m) => m[1]));

  it.each(Object.keys(DIALECTS))('lists exactly the columns the %s DDL creates (version 1, then the upgrade)', (database) => {
    const request: TableDdl = { table: 't', quoted: '"t"', ifNotExists: false };
    const dialect = DIALECTS[database];
    expect(declaredColumns([...dialect.outboxTableDdl(request), ...dialect.outboxV2Ddl(request)])).toEqual(TABLE_COLUMNS.outbox);
    expect(declaredColumns(DIALECTS[database].inboxTableDdl(request))).toEqual(TABLE_COLUMNS.inbox);
  });
});
