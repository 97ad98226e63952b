import { outboxUpgradeDdl, SchemaSql, TableDdl } from '../dialects/schema-sql';

/** What each schema version of the outbox table adds where it changes anything, for logs and the CLI. */
const ADDED_BY_VERSION: Record<2 | 3 | 4, string> = {
  2: 'transport and destination columns, lane index',
  3: 'a business-key unique index over the rows that have one',
  4: 'an ordering index over the keys of unfinished rows only, and a lane index leading with the status in place of the processing index',
};

/** Any table: only whether a version has statements on this database matters, not their text. */
const ANY_TABLE: TableDdl = { table: 'outbox_message', quoted: 'outbox_message', ifNotExists: false };

/**
 * What an upgrade from version `from` to the latest brings on the database `schemaSql` is for, in
 * words: a version with no statements there (version 3 on MySQL, MariaDB and SQLite, version 4
 * on PostgreSQL and SQLite) adds nothing to say.
 */
export function outboxUpgradeSummary(schemaSql: SchemaSql, from: number): string {
  const versions = ([2, 3, 4] as const).filter((version) => version > from && outboxUpgradeDdl(schemaSql, version, ANY_TABLE).length > 0);
  const added = versions.map((version) => ADDED_BY_VERSION[version]);
  return added.length > 0 ? added.join('; ') : 'no statement changes the table on this database';
}
