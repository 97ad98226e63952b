import { SchemaSql, TableDdl } from '../dialects/schema-sql';

/** What each schema version of the outbox table adds where it changes anything, for logs and the CLI. */
const ADDED_BY_VERSION: Record<number, { added: string; ddl: (schemaSql: SchemaSql, request: TableDdl) => string[] }> = {
  2: { added: 'transport and destination columns, lane index', ddl: (schemaSql, request) => schemaSql.outboxV2Ddl(request) },
  3: { added: 'a business-key unique index over the rows that have one', ddl: (schemaSql, request) => schemaSql.outboxV3Ddl(request) },
  4: {
    added: 'an ordering index over the keys of unfinished rows only, and a lane index leading with the status in place of the processing index',
    ddl: (schemaSql, request) => schemaSql.outboxV4Ddl(request),
  },
};

/** Any table: only whether a version has statements on this database matters, not their text. */
const ANY_TABLE: TableDdl = { table: 'outbox_message', quoted: 'outbox_message', ifNotExists: false };

/**
 * What an upgrade from version `from` to the latest brings on the database `schemaSql` is for, in
 * words: a version with no statements there (version 3 on MySQL, MariaDB and SQLite, version 4
 * on PostgreSQL and SQLite) adds nothing to say.
 */
export function outboxUpgradeSummary(schemaSql: SchemaSql, from: number): string {
  const added = Object.entries(ADDED_BY_VERSION)
    .filter(([version, { ddl }]) => Number(version) > from && ddl(schemaSql, ANY_TABLE).length > 0)
    .map(([, { added }]) => added);
  return added.length > 0 ? added.join('; ') : 'no statement changes the table on this database';
}
