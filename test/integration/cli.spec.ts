import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { DataSource, DataSourceOptions } from 'typeorm';
import { createInboxTableMigration, createOutboxTableMigration, createOutboxTableV2Migration, MessageStatus } from '../../lib';
import { mysqlSchemaSql } from '../../lib/dialects/mysql/mysql-schema';
import { describeMysqlServer } from '../../lib/dialects/mysql/mysql-server';
import { postgresSchemaSql } from '../../lib/dialects/postgres/postgres-schema';
import { qualifiedTable, resolveDialect } from '../../lib/dialects/resolve-dialect';
import { SchemaSql, TableDdl } from '../../lib/dialects/schema-sql';
import { sqliteSchemaSql } from '../../lib/dialects/sqlite/sqlite-schema';
import { testDatabase } from '../support/database';
import { runMigrations } from '../support/run-migrations';
import { storedTime } from '../support/sql-values';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_cli');
const ROOT = resolve(__dirname, '../..');
/** A password in the PostgreSQL DataSource's URL (trust authentication ignores it): no output may show it. */
const SECRET = 'cli-s3cret-password';
const { PENDING, DONE, FAILED, MANUAL_REQUIRED, ABANDONED } = MessageStatus;
/** Seeded rows are created at this instant; filters bound by it. */
const T0 = new Date('2024-03-01T12:00:00.000Z');
/** Every child of a test starts at once, on a machine that may be loaded. */
const CLI_TIMEOUT = timeoutFor(STARTUP_TIMEOUT_MS);
/** The package as `npm run build` lays it out, from the current sources: the library transpiled once in `beforeAll`. */
let packageDirectory: string;

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The library's sources as JavaScript, one file each as ts-node's transpile-only mode makes them:
 * once for the whole file rather than once in every child, which would spend seconds on it.
 */
function transpileLibrary(): string {
  const directory = mkdtempSync(join(tmpdir(), 'nestjs-outbox-package-'));
  const { options } = ts.parseJsonConfigFileContent(ts.readConfigFile(resolve(ROOT, 'tsconfig.json'), ts.sys.readFile).config, ts.sys, ROOT);
  for (const source of ts.sys.readDirectory(resolve(ROOT, 'lib'), ['.ts'])) {
    const { outputText } = ts.transpileModule(readFileSync(source, 'utf8'), { compilerOptions: { ...options, sourceMap: false }, fileName: source });
    const target = join(directory, 'dist', relative(resolve(ROOT, 'lib'), source)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  copyFileSync(resolve(ROOT, 'package.json'), join(directory, 'package.json'));
  mkdirSync(join(directory, 'bin'));
  copyFileSync(resolve(ROOT, 'bin/nestjs-outbox.js'), join(directory, 'bin/nestjs-outbox.js'));
  return directory;
}

/**
 * Runs the command line in a child process through the package's `bin` file, as `npx nestjs-outbox`
 * does. The package's dependencies are the repository's; a TypeScript DataSource file is loaded
 * through the ts-node the CLI finds from the working directory.
 */
function cli(...args: string[]): Promise<CliRun> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [join(packageDirectory, 'bin/nestjs-outbox.js'), ...args], {
      cwd: ROOT,
      env: { ...process.env, NODE_PATH: resolve(ROOT, 'node_modules'), TS_NODE_PROJECT: resolve(ROOT, 'tsconfig.json'), TS_NODE_TRANSPILE_ONLY: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      if (`${stdout}${stderr}`.includes(SECRET)) reject(new Error(`nestjs-outbox ${args.join(' ')} printed the DataSource's password:\n${stdout}${stderr}`));
      else resolveRun({ code, stdout, stderr });
    });
  });
}

/** The single JSON document a `--json` run printed. */
function json(run: CliRun): any {
  return JSON.parse(run.stdout);
}

/** The test database's DataSource options, with a password where the server ignores it. */
function fileOptions(): DataSourceOptions {
  const options = database.dataSourceOptions({ poolSize: 2 });
  if (options.type !== 'postgres' || !options.url) return options;
  const url = new URL(options.url);
  url.password = SECRET;
  return { ...options, url: url.toString() };
}

const TYPEORM = JSON.stringify(require.resolve('typeorm'));

describe('nestjs-outbox CLI', () => {
  let directory: string;
  /** Exports the DataSource under a name of its own (CommonJS). */
  let dataSourceJs: string;
  /** Exports it as the default export (TypeScript). */
  let dataSourceTs: string;
  /** Lists the library's migrations among the DataSource's own. */
  let withMigrationsJs: string;

  beforeAll(async () => {
    packageDirectory = transpileLibrary();
    await database.reset();
    directory = mkdtempSync(join(tmpdir(), 'nestjs-outbox-cli-'));
    const options = JSON.stringify(fileOptions());
    dataSourceJs = join(directory, 'data-source.js');
    writeFileSync(dataSourceJs, `const { DataSource } = require(${TYPEORM});\nexports.appDataSource = new DataSource(${options});\n`);
    dataSourceTs = join(directory, 'data-source.ts');
    writeFileSync(dataSourceTs, `import { DataSource } from ${TYPEORM};\nexport default new DataSource(${options});\n`);
    withMigrationsJs = join(directory, 'with-migrations.js');
    writeFileSync(
      withMigrationsJs,
      `const { DataSource } = require(${TYPEORM});\nconst { OUTBOX_MIGRATIONS } = require(${JSON.stringify(join(packageDirectory, 'dist/schema/table-migrations.js'))});\n` +
        `module.exports = new DataSource({ ...${options}, migrations: OUTBOX_MIGRATIONS });\n`,
    );
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(() => {
    for (const temporary of [directory, packageDirectory]) if (temporary) rmSync(temporary, { recursive: true, force: true });
  });

  it(
    'reports missing tables on a fresh database with exit code 1 and says what to run',
    async () => {
      const [text, report, refused] = await Promise.all([
        cli('status', '-d', dataSourceJs),
        cli('status', '-d', dataSourceTs, '--json'),
        cli('migrate', '-d', withMigrationsJs),
      ]);
      expect(text).toMatchObject({ code: 1, stderr: '' });
      expect(text.stdout).toContain('Outbox table outbox_message: missing');
      expect(text.stdout).toContain('Inbox table inbox_message: missing');
      expect(text.stdout).toContain(`Next: nestjs-outbox migrate -d ${dataSourceJs}`);
      expect(report.code).toBe(1);
      expect(json(report)).toMatchObject({
        ready: false,
        outbox: { table: 'outbox_message', state: 'missing', schemaVersion: 'missing', latestSchemaVersion: 4, stats: null },
        inbox: { table: 'inbox_message', state: 'missing', stats: null },
        next: `nestjs-outbox migrate -d ${dataSourceTs}`,
      });
      // The DataSource's migrations would fail on tables made by migrate: it leaves them to them.
      expect(refused).toMatchObject({ code: 1, stdout: '' });
      expect(refused.stderr).toMatch(
        /migrate changed nothing: the DataSource's migrations include CreateOutboxTable_outbox_message\d+, which creates the outbox table outbox_message: run them/,
      );
    },
    CLI_TIMEOUT,
  );

  it(
    'migrate creates both tables at schema version 4, and does nothing when run again',
    async () => {
      const created = await cli('migrate', '-d', dataSourceJs);
      expect(created).toMatchObject({ code: 0, stderr: '' });
      expect(created.stdout).toContain('Created the outbox table outbox_message (schema version 4).\nCreated the inbox table inbox_message.\n');

      const [again, report, text] = await Promise.all([
        cli('migrate', '-d', dataSourceJs, '--json'),
        cli('status', '-d', dataSourceJs, '--json'),
        cli('status', '-d', dataSourceTs),
      ]);
      expect(again.code).toBe(0);
      expect(json(again)).toMatchObject({
        outbox: { table: 'outbox_message', action: 'none', schemaVersion: 4 },
        inbox: { table: 'inbox_message', action: 'none' },
      });
      expect(report.code).toBe(0);
      expect(json(report)).toMatchObject({
        ready: true,
        outbox: { state: 'current', schemaVersion: 4, problem: null, upgrade: null, stats: { due: 0, inFlight: 0, byTransport: {} } },
        inbox: { state: 'current', problem: null, stats: { due: 0, byConsumer: {} } },
        next: null,
      });
      expect(text).toMatchObject({ code: 0, stderr: '' });
      expect(text.stdout).toContain('Outbox table outbox_message: schema version 4 (current)\nInbox table inbox_message: present\n');
      expect(text.stdout).not.toContain('Next:');
    },
    CLI_TIMEOUT,
  );

  it(
    "leaves alone a table that is not one of the library's, with exit code 1",
    async () => {
      await database.sql('CREATE TABLE {cli_orders} (id integer NOT NULL, total integer)');
      const [status, migrate] = await Promise.all([
        cli('status', '-d', dataSourceJs, '--table', 'cli_orders'),
        cli('migrate', '-d', dataSourceJs, '--table', 'cli_orders'),
      ]);
      expect(status.code).toBe(1);
      expect(status.stdout).toContain('Outbox table cli_orders: not an outbox table');
      expect(migrate).toMatchObject({ code: 1, stdout: '' });
      expect(migrate.stderr).toContain('migrate changed nothing: the table cli_orders exists but is not an outbox table (no column message_id');
      const columns = await database.sql('SELECT * FROM {cli_orders}');
      expect(columns).toEqual([]);
    },
    CLI_TIMEOUT,
  );

  it(
    'prints each dialect\'s DDL, one statement per ";" and newline, without a connection or from the DataSource\'s',
    async () => {
      const quotedBy = (quote: string) => (table: string) => `${quote}${table}${quote}`;
      const offline: [string, SchemaSql, (table: string) => string][] = [
        ['postgres', postgresSchemaSql, quotedBy('"')],
        ['mysql', mysqlSchemaSql(describeMysqlServer('8.4.0')), quotedBy('`')],
        ['mariadb', mysqlSchemaSql(describeMysqlServer('11.4.0-MariaDB')), quotedBy('`')],
        ['sqlite', sqliteSchemaSql, quotedBy('"')],
      ];
      const dataSource = new DataSource({ ...database.dataSourceOptions(), synchronize: false });
      await dataSource.initialize();
      const connected = (await resolveDialect(dataSource)).schemaSql;
      const connectedQuote = (table: string) => qualifiedTable(dataSource, table);
      await dataSource.destroy();

      const [fromDataSource, upgradeOnly, v3Only, v3OnMariadb, v4Only, v4OnPostgres, ...scripts] = await Promise.all([
        cli('sql', '-d', dataSourceJs, '--json'),
        cli('sql', '--dialect', 'postgres', '--from', '1', '--to', '2', '--json'),
        cli('sql', '--dialect', 'postgres', '--from', '2', '--to', '3'),
        cli('sql', '--dialect', 'mariadb', '--from', '2', '--to', '3'),
        cli('sql', '--dialect', 'mysql', '--from', '3'),
        cli('sql', '--dialect', 'postgres', '--from', '3'),
        ...offline.map(([dialect]) => cli('sql', '--dialect', dialect)),
      ]);
      offline.forEach(([dialect, ddl, quote], index) => {
        const run = scripts[index];
        expect({ dialect, code: run.code, stderr: run.stderr }).toEqual({ dialect, code: 0, stderr: '' });
        const [header, body] = splitHeader(run.stdout);
        expect(header.every((line) => line.startsWith('-- '))).toBe(true);
        expect(body).toBe(
          allStatements(ddl, quote)
            .map((statement) => `${statement};\n`)
            .join('\n'),
        );
      });
      expect(json(upgradeOnly)).toEqual({
        dialect: 'postgres',
        from: 1,
        to: 2,
        statements: postgresSchemaSql.outboxV2Ddl(request('outbox_message', quotedBy('"'))),
      });
      // Version 3 is one statement (a DO block), so atomic even when psql runs the script without a transaction.
      const [, v3Body] = splitHeader(v3Only.stdout);
      expect(v3Body).toBe(`${postgresSchemaSql.outboxV3Ddl(request('outbox_message', quotedBy('"')))[0]};\n`);
      expect(v3Body).toMatch(/^DO \$outbox_v3\$ BEGIN\n/);
      expect(v3OnMariadb).toMatchObject({ code: 0, stderr: '' });
      expect(v3OnMariadb.stdout).toContain('-- nothing to run: on this database version 3 is version 2\n');
      expect(splitHeader(v3OnMariadb.stdout)[1]).toBe('');
      // Version 4 is one ALTER on MySQL and MariaDB, and nothing on PostgreSQL.
      const v4Statements = mysqlSchemaSql(describeMysqlServer('8.4.0')).outboxV4Ddl(request('outbox_message', quotedBy('`')));
      expect(v4Statements).toHaveLength(1);
      expect(splitHeader(v4Only.stdout)[1]).toBe(`${v4Statements[0]};\n`);
      expect(v4Only.stdout).toContain('ADD COLUMN `unfinished_ordering_key` varchar(255) AS (IF(status IN (');
      expect(v4OnPostgres.stdout).toContain('-- nothing to run: on this database version 4 is version 3\n');
      expect(fromDataSource.code).toBe(0);
      expect(json(fromDataSource)).toMatchObject({ dialect: database.kind, from: 0, to: 4, statements: allStatements(connected, connectedQuote) });
    },
    CLI_TIMEOUT,
  );

  describe('operations on the messages a filter selects', () => {
    beforeAll(async () => {
      await database.sql('DELETE FROM {outbox_message}');
      await database.sql('DELETE FROM {inbox_message}');
      for (const status of [FAILED, MANUAL_REQUIRED, DONE]) await seedOutbox('cli.requeue', status);
      for (const status of [PENDING, FAILED, DONE]) await seedOutbox('cli.abandon', status);
      for (const status of [DONE, ABANDONED, MANUAL_REQUIRED, PENDING]) await seedOutbox('cli.purge', status);
      await seedOutbox('cli.replay', DONE, { transport: 'partners' });
      await seedOutbox('cli.replay', DONE);
      await seedOutbox('cli.list', MANUAL_REQUIRED, { lastError: 'HTTP 410 Gone\nfrom the partner' });
      await seedOutbox('cli.list', FAILED, { lastError: 'timeout' });
      await seedOutbox('cli.list', MANUAL_REQUIRED, { lastError: 'HTTP 410 Gone' });
      for (const status of [FAILED, MANUAL_REQUIRED, DONE]) await seedInbox('Billing.handle', status);
      await seedInbox('Shipping.handle', FAILED);
    });

    it(
      'lists them a page at a time, newest first, as aligned columns or JSON',
      async () => {
        const [page, text, inbox, stats] = await Promise.all([
          cli('list', '-d', dataSourceJs, '--type', 'cli.list', '--status', 'MANUAL_REQUIRED', '--limit', '1', '--json'),
          cli(
            'list',
            '-d',
            dataSourceJs,
            '--type',
            'cli.list',
            '--error-contains',
            'HTTP 410',
            '--order',
            'oldest',
            '--created-after',
            '2024-03-01',
            '--created-before',
            '2024-03-02T00:00:00Z',
          ),
          cli('list', '-d', dataSourceTs, '--inbox', '--consumer', 'Billing.handle', '--status', 'failed,manual_required', '--json'),
          cli('status', '-d', dataSourceJs, '--json'),
        ]);
        expect(page.code).toBe(0);
        const { messages, next } = json(page);
        expect(messages).toHaveLength(1);
        expect(messages[0]).toMatchObject({
          type: 'cli.list',
          status: MANUAL_REQUIRED,
          lastError: 'HTTP 410 Gone',
          transport: 'default',
          destination: 'dest',
          createdAt: T0.toISOString(),
        });
        expect(next).toBe(messages[0].id);

        expect(text).toMatchObject({ code: 0, stderr: '' });
        const lines = text.stdout.trimEnd().split('\n');
        expect(lines[0]).toMatch(/^ *ID {2}MESSAGE ID +STATUS +TYPE +BIZ KEY +TRANSPORT +ATTEMPTS +CREATED +LAST ERROR$/);
        // Two rows, their error's line break shown as a space, every column where its header is.
        expect(lines.slice(1, 3).map((line) => line.slice(lines[0].indexOf('STATUS')).split('  ')[0])).toEqual([MANUAL_REQUIRED, MANUAL_REQUIRED]);
        expect(lines[1].slice(lines[0].indexOf('LAST ERROR'))).toBe('HTTP 410 Gone from the partner');
        expect(lines[1].slice(lines[0].indexOf('CREATED')).startsWith('2024-03-01 12:00:00Z')).toBe(true);
        expect(lines.slice(3)).toEqual(['', '2 messages (oldest first).']);

        expect(inbox.code).toBe(0);
        const deliveries = json(inbox).messages;
        expect(deliveries.map((delivery: any) => delivery.status)).toEqual([MANUAL_REQUIRED, FAILED]);
        expect(deliveries[0]).toMatchObject({ consumer: 'Billing.handle' });
        expect(deliveries[0]).not.toHaveProperty('transport');

        expect(json(stats)).toMatchObject({
          outbox: { stats: { counts: { MANUAL_REQUIRED: 4, DONE: 5 }, byTransport: { partners: { counts: { DONE: 1 } } } } },
          inbox: { stats: { counts: { FAILED: 2 }, byConsumer: { 'Billing.handle': { counts: { FAILED: 1, MANUAL_REQUIRED: 1, DONE: 1 } } } } },
        });
      },
      CLI_TIMEOUT,
    );

    it(
      'requeues, abandons, purges and replays them in batches, saying that dispatchers find them at their next poll',
      async () => {
        const [requeue, abandon, purge, replay, requeueInbox] = await Promise.all([
          cli('requeue', '-d', dataSourceJs, '--type', 'cli.requeue', '--json'),
          cli('abandon', '-d', dataSourceJs, '--type', 'cli.abandon', '--batch-size', '1'),
          cli('purge', '-d', dataSourceJs, '--type', 'cli.purge', '--created-before', '2024-03-02'),
          cli('replay', '-d', dataSourceJs, '--type', 'cli.replay', '--transport', 'partners', '--json'),
          cli('requeue', '-d', dataSourceJs, '--inbox', '--consumer', 'Billing.handle', '--json'),
        ]);
        expect(json(requeue)).toEqual({ operation: 'requeue', table: 'outbox_message', changed: 2, note: expect.stringContaining('at their next poll') });
        expect(abandon).toMatchObject({ code: 0, stderr: '' });
        expect(abandon.stdout).toBe(
          'Abandoned 2 outbox messages in outbox_message.\nNote: no dispatcher is woken from here: running dispatchers find the rows at their next poll.\n',
        );
        expect(purge.stdout).toBe('Purged 2 outbox messages in outbox_message.\n');
        expect(json(replay)).toMatchObject({ operation: 'replay', changed: 1 });
        expect(json(requeueInbox)).toMatchObject({ operation: 'requeue', table: 'inbox_message', changed: 2, note: expect.stringContaining('inbox workers') });

        expect(await outboxStates('cli.requeue')).toEqual([`${PENDING}/0`, `${PENDING}/0`, `${DONE}/3`]);
        expect(await outboxStates('cli.abandon')).toEqual([ABANDONED, ABANDONED, DONE].map((status) => `${status}/3`));
        expect(await outboxStates('cli.purge')).toEqual([`${MANUAL_REQUIRED}/3`, `${PENDING}/3`]);
        expect(await outboxStates('cli.replay')).toEqual([`${PENDING}/0`, `${DONE}/3`]);
        const inbox = await database.sql(`SELECT consumer, status, attempts FROM {inbox_message} ORDER BY id`);
        expect(inbox.map((row) => `${row.consumer} ${row.status}/${row.attempts}`)).toEqual([
          'Billing.handle FAILED/0',
          'Billing.handle FAILED/0',
          'Billing.handle DONE/2',
          'Shipping.handle FAILED/2',
        ]);
      },
      CLI_TIMEOUT,
    );

    it(
      'refuses an empty filter as OutboxAdmin does, and any wrong command line, with exit code 2',
      async () => {
        const runs = await Promise.all([
          cli('requeue', '-d', dataSourceJs),
          cli('purge', '-d', dataSourceJs, '--type', 'cli.purge'),
          cli('replay', '-d', dataSourceJs, '--inbox', '--type', 'x'),
          cli('list', '-d', dataSourceJs, '--created-after', '2024-03-01T12:00'),
          cli('status', '-d', dataSourceJs, '--verbose'),
          cli('status'),
          cli(),
        ]);
        const [empty, purgeUnbounded, replayInbox, localTime, unknownOption, noDataSource, noCommand] = runs;
        for (const run of runs) expect(run).toMatchObject({ code: 2, stdout: '' });
        expect(empty.stderr).toBe(
          'nestjs-outbox requeue: Invalid OutboxAdmin filter: requeueMessages() refuses an empty filter, which would reach every row of the table: give at least one field;' +
            ' filter options: --status, --type, --biz-key, --transport, --consumer, --error-contains, --created-after, --created-before\n',
        );
        expect(purgeUnbounded.stderr).toContain('purgeMessages() needs a status or a time bound');
        expect(replayInbox.stderr).toContain('replay applies to the outbox only');
        expect(localTime.stderr).toContain('--created-after must be a date (2024-03-01, midnight UTC) or an ISO 8601 time with its zone');
        expect(unknownOption.stderr).toContain("Unknown option '--verbose'");
        expect(noDataSource.stderr).toContain('-d <data-source file> is required');
        expect(noCommand.stderr).toContain('Usage: nestjs-outbox <command> -d <data-source file> [options]');
        // Nothing changed.
        expect(await outboxStates('cli.purge')).toEqual([`${MANUAL_REQUIRED}/3`, `${PENDING}/3`]);
      },
      CLI_TIMEOUT,
    );

    it(
      'describes each command with --help',
      async () => {
        const [status, purge] = await Promise.all([cli('status', '--help'), cli('help', 'purge')]);
        expect(status).toMatchObject({ code: 0, stderr: '' });
        expect(status.stdout).toMatch(/^Usage: nestjs-outbox status -d <data-source file>/);
        expect(status.stdout).toContain('Exit code 0 when both tables are ready, 1 while a table is missing');
        expect(purge.stdout).toContain('--created-before <time>');
      },
      CLI_TIMEOUT,
    );
  });

  describe('parked ordering keys', () => {
    beforeAll(async () => {
      await database.sql('DELETE FROM {outbox_message}');
      await database.sql('DELETE FROM {inbox_message}');
    });

    it(
      'lists the keys held back by a MANUAL_REQUIRED head, exiting with 1 while any is parked',
      async () => {
        expect(await cli('parked', '-d', dataSourceJs)).toMatchObject({ code: 0, stdout: 'No ordering key is parked.\n', stderr: '' });

        await seedOutbox('cli.ledger', MANUAL_REQUIRED, { transport: 'partners', orderingKey: 'account-7', lastError: 'ledger refused' });
        for (const status of [PENDING, PENDING]) await seedOutbox('cli.ledger', status, { transport: 'partners', orderingKey: 'account-7' });
        // A key whose head was sent is not parked, whatever follows it.
        for (const status of [DONE, FAILED]) await seedOutbox('cli.ledger', status, { orderingKey: 'account-8' });
        await seedInbox('Ledger.handle', MANUAL_REQUIRED, 'account-9');
        await seedInbox('Ledger.handle', PENDING, 'account-9');

        const [text, outbox, inbox, refused] = await Promise.all([
          cli('parked', '-d', dataSourceJs),
          cli('parked', '-d', dataSourceJs, '--json'),
          cli('parked', '-d', dataSourceTs, '--inbox', '--json'),
          cli('parked', '-d', dataSourceJs, '--limit', '0'),
        ]);
        expect(text).toMatchObject({ code: 1, stderr: '' });
        const lines = text.stdout.trimEnd().split('\n');
        expect(lines[0]).toMatch(/^ORDERING KEY +TRANSPORT +HEAD MESSAGE ID +TYPE +ATTEMPTS +WAITING +LAST ERROR$/);
        expect(lines[1]).toMatch(/^account-7 +partners +[0-9a-f-]{36} +cli\.ledger +3 +2 +ledger refused$/);
        expect(lines.slice(2)).toEqual(['', '1 parked key: requeue or abandon each head message to release its key.']);

        expect(outbox.code).toBe(1);
        expect(json(outbox).keys).toEqual([
          expect.objectContaining({
            orderingKey: 'account-7',
            transport: 'partners',
            type: 'cli.ledger',
            attempts: 3,
            waiting: 2,
            lastError: 'ledger refused',
          }),
        ]);
        expect(json(outbox).keys[0]).not.toHaveProperty('consumer');
        expect(inbox.code).toBe(1);
        expect(json(inbox).keys).toEqual([expect.objectContaining({ orderingKey: 'account-9', consumer: 'Ledger.handle', waiting: 1 })]);
        expect(json(inbox).keys[0]).not.toHaveProperty('transport');
        expect(refused.code).toBe(2);
        expect(refused.stderr).toContain('--limit must be an integer from 1 to 1000');
      },
      CLI_TIMEOUT,
    );
  });

  describe('on an outbox table of schema version 1', () => {
    beforeAll(async () => {
      await database.reset();
      await runMigrations(database, [createOutboxTableMigration()]);
    }, timeoutFor(STARTUP_TIMEOUT_MS));

    it(
      'status exits with 1, the outbox being behind; migrate upgrades it and creates the inbox',
      async () => {
        const [text, report] = await Promise.all([cli('status', '-d', dataSourceJs), cli('status', '-d', dataSourceJs, '--json')]);
        expect(text.code).toBe(1);
        expect(text.stdout).toContain('Outbox table outbox_message: schema version 1 (behind: the latest is 4)');
        expect(text.stdout).toContain('Not ready: the outbox table outbox_message is of schema version 1');
        expect(json(report)).toMatchObject({ ready: false, outbox: { state: 'behind', schemaVersion: 1, stats: null }, inbox: { state: 'missing' } });

        const migrated = await cli('migrate', '-d', dataSourceJs);
        expect(migrated).toMatchObject({ code: 0, stderr: '' });
        expect(migrated.stdout).toContain('Upgraded the outbox table outbox_message from schema version 1 to 4 (transport and destination columns');
        expect(migrated.stdout).toContain('Created the inbox table inbox_message.');
        const after = await cli('status', '-d', dataSourceJs, '--json');
        expect(after.code).toBe(0);
        expect(json(after)).toMatchObject({ ready: true, outbox: { state: 'current', schemaVersion: 4 } });
      },
      CLI_TIMEOUT,
    );
  });

  describe('on an outbox table of schema version 2', () => {
    beforeAll(async () => {
      await database.reset();
      await runMigrations(database, [createOutboxTableMigration(), createInboxTableMigration(), createOutboxTableV2Migration()]);
    }, timeoutFor(STARTUP_TIMEOUT_MS));

    it(
      'status is ready (exit 0) and, on PostgreSQL and MySQL, says migrate upgrades it to version 4; migrate does',
      async () => {
        const [text, report] = await Promise.all([cli('status', '-d', dataSourceJs), cli('status', '-d', dataSourceJs, '--json')]);
        expect(text).toMatchObject({ code: 0, stderr: '' });
        expect(report.code).toBe(0);
        if (database.kind === 'sqlite') {
          // Versions 3 and 4 change nothing here: the table is current as it is.
          expect(json(report)).toMatchObject({ ready: true, outbox: { state: 'current', schemaVersion: 4, upgrade: null }, next: null });
          expect((await cli('migrate', '-d', dataSourceJs)).stdout).toContain('Nothing to do: the outbox table outbox_message is at schema version 4');
          return;
        }
        // On MySQL and MariaDB version 3 is version 2: the table is of version 3 there.
        const version = database.kind === 'postgres' ? 2 : 3;
        expect(text.stdout).toContain(
          version === 2
            ? 'Outbox table outbox_message: schema version 2 (works; the latest is 4: a business-key unique index over the rows that have one)'
            : 'Outbox table outbox_message: schema version 3 (works; the latest is 4: an ordering index over the keys of unfinished rows only, and a lane index leading with the status in place of the processing index)',
        );
        expect(text.stdout).not.toContain('Not ready');
        expect(text.stdout).toContain(`Next: nestjs-outbox migrate -d ${dataSourceJs}`);
        expect(json(report)).toMatchObject({
          ready: true,
          outbox: { state: 'upgradable', schemaVersion: version, problem: null, stats: { due: 0 } },
          next: `nestjs-outbox migrate -d ${dataSourceJs}`,
        });

        const migrated = await cli('migrate', '-d', dataSourceJs, '--json');
        expect(migrated).toMatchObject({ code: 0, stderr: '' });
        expect(json(migrated)).toMatchObject({ outbox: { action: 'upgraded', fromSchemaVersion: version, schemaVersion: 4 }, inbox: { action: 'none' } });
        const after = await cli('status', '-d', dataSourceJs, '--json');
        expect(json(after)).toMatchObject({ ready: true, outbox: { state: 'current', schemaVersion: 4, upgrade: null }, next: null });
      },
      CLI_TIMEOUT,
    );
  });
});

/** A script's leading comment lines, and the statements after the blank line that ends them. */
function splitHeader(script: string): [string[], string] {
  const end = script.indexOf('\n\n');
  return [script.slice(0, end).split('\n'), script.slice(end + 2)];
}

function request(table: string, quote: (table: string) => string): TableDdl {
  return { table, quoted: quote(table), ifNotExists: false };
}

/** Version 1's statements, both tables, then the upgrades: what `sql` prints by default. */
function allStatements(ddl: SchemaSql, quote: (table: string) => string): string[] {
  return [
    ...ddl.outboxTableDdl(request('outbox_message', quote)),
    ...ddl.inboxTableDdl(request('inbox_message', quote)),
    ...ddl.outboxV2Ddl(request('outbox_message', quote)),
    ...ddl.outboxV3Ddl(request('outbox_message', quote)),
    ...ddl.outboxV4Ddl(request('outbox_message', quote)),
  ];
}

async function seedOutbox(type: string, status: MessageStatus, extra: { transport?: string; lastError?: string; orderingKey?: string } = {}): Promise<void> {
  const finished = status === DONE || status === ABANDONED;
  await database.sql(
    `INSERT INTO {outbox_message}
       (message_id, message_type, transport, exchange, routing_key, destination, payload, headers, status, attempts, max_attempts, next_attempt_at, last_error, created_at, processed_at, ordering_key)
     VALUES (?, ?, ?, 'x', 'k', 'dest', '{}', '{}', ?, 3, 5, ${database.timeAgo(1_000)}, ?, ?, ${finished ? database.timeAgo(0) : 'NULL'}, ?)`,
    [randomUUID(), type, extra.transport ?? 'default', status, extra.lastError ?? null, storedTime(database.kind, T0), extra.orderingKey ?? null],
  );
}

async function seedInbox(consumer: string, status: MessageStatus, orderingKey: string | null = null): Promise<void> {
  const finished = status === DONE || status === ABANDONED;
  await database.sql(
    `INSERT INTO {inbox_message}
       (consumer, message_id, message_type, exchange, routing_key, payload, headers, status, attempts, max_attempts, next_attempt_at, created_at, processed_at, ordering_key)
     VALUES (?, ?, '', 'x', 'k', '{}', '{}', ?, 2, 5, ${database.timeAgo(0)}, ?, ${finished ? database.timeAgo(0) : 'NULL'}, ?)`,
    [consumer, randomUUID(), status, storedTime(database.kind, T0), orderingKey],
  );
}

/** `STATUS/attempts` of the outbox rows of a type, in id order. */
async function outboxStates(type: string): Promise<string[]> {
  const rows = await database.sql(`SELECT status, attempts FROM {outbox_message} WHERE message_type = ? ORDER BY id`, [type]);
  return rows.map((row) => `${row.status}/${Number(row.attempts)}`);
}
