import { DataSource } from 'typeorm';
import { resolveDialect } from '../../lib/dialects/resolve-dialect';
import { createTablesAtStartup } from '../../lib/schema/create-tables-at-startup';
import { tableColumns, withQueryRunner } from '../../lib/schema/outbox-schema-version';
import { testDatabase } from '../support/database';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_create_tables_at_once');

/** As many replicas as start together in a rolling deploy, each with a connection of its own. */
const REPLICAS = 4;
const ROUNDS = 5;

describe('Start-up creation of the tables by several processes at once', () => {
  const dataSources: DataSource[] = [];

  beforeAll(async () => {
    await database.reset();
    for (let i = 0; i < REPLICAS; i++) dataSources.push(await new DataSource(database.dataSourceOptions()).initialize());
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await Promise.all(dataSources.map((dataSource) => dataSource.destroy()));
  });

  it(
    'creates each table once, and no replica fails on what another is creating',
    async () => {
      const dialect = await resolveDialect(dataSources[0]);
      // PostgreSQL's CREATE TABLE IF NOT EXISTS checks, then inserts into its catalog: two at once
      // can both pass the check, and the second fails on the catalog's unique key. A round races
      // only some of the time, so the test runs several.
      for (let round = 0; round < ROUNDS; round++) {
        const tables = { outbox: `round${round}_outbox`, inbox: `round${round}_inbox` };
        const starts = await Promise.allSettled(dataSources.map((dataSource) => createTablesAtStartup(dataSource, dialect, tables)));
        expect(starts.filter((start) => start.status === 'rejected')).toEqual([]);
        const columns = await withQueryRunner(dataSources[0], (runner) => tableColumns(runner, dialect, tables.outbox));
        // The outbox at the latest version, the inbox there and empty.
        expect(columns.has('transport')).toBe(true);
        expect(Number((await database.sql(`SELECT count(*) AS n FROM {${tables.inbox}}`))[0].n)).toBe(0);
      }
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );
});
