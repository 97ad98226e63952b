import { SchemaSql, TableDdl, TableLocation } from '../schema-sql';
import { SqlQuery } from '../sql-query';
import { archiveNames, inboxIndexNames, outboxIndexNames, stateIndexNames, TableKind } from '../../naming/index-names';
import { CLAIMABLE_SQL, UNFINISHED_SQL } from '../status-sql';
import { SQLITE_NOW } from './sqlite-time';

/**
 * The state-machine columns both tables end with. Times are TEXT in the one format of
 * `sqlite-time.ts`, so that they compare as text.
 */
const STATE_COLUMNS = `
  "status" varchar(20) NOT NULL,
  "attempts" integer NOT NULL DEFAULT 0,
  "max_attempts" integer NOT NULL,
  "next_attempt_at" text NOT NULL DEFAULT (${SQLITE_NOW}),
  "claimed_at" text,
  "claim_token" varchar(36),
  "claimed_by" varchar(200),
  "last_error" text,
  "created_at" text NOT NULL DEFAULT (${SQLITE_NOW}),
  "processed_at" text,`;

/** The outbox table's message columns, between its id and its state columns. */
const OUTBOX_MESSAGE_COLUMNS = `
  "message_id" varchar(36) NOT NULL,
  "message_type" varchar(255) NOT NULL,
  "biz_key" varchar(255),
  "ordering_key" varchar(255),
  "exchange" varchar(255) NOT NULL,
  "routing_key" varchar(255) NOT NULL,
  "payload" text NOT NULL,
  "headers" text NOT NULL,`;

/** The inbox table's message columns, between its id and its state columns. */
const INBOX_MESSAGE_COLUMNS = `
  "consumer" varchar(200) NOT NULL,
  "message_id" varchar(255) NOT NULL,
  "message_type" varchar(255) NOT NULL DEFAULT '',
  "biz_key" varchar(255),
  "ordering_key" varchar(255),
  "exchange" varchar(255) NOT NULL,
  "routing_key" varchar(255) NOT NULL,
  "payload" text NOT NULL,
  "headers" text NOT NULL,`;

/** The columns schema version 2 added to the outbox table. */
const TRANSPORT_COLUMN = `"transport" varchar(100) NOT NULL DEFAULT 'default'`;
const DESTINATION_COLUMN = `"destination" varchar(255) NOT NULL DEFAULT ''`;

/**
 * The id: an alias of the rowid (the type must be exactly INTEGER), AUTOINCREMENT so that an id
 * is never reused after retention deleted the newest rows: ids order messages.
 */
const ID_COLUMN = `"id" INTEGER NOT NULL`;
const primaryKey = (name: string, column = 'id') => `CONSTRAINT "${name}" PRIMARY KEY ("${column}" AUTOINCREMENT)`;

/**
 * The claim, reclaim and ordering indexes. Partial, so that their cost does not grow with
 * retained DONE history.
 */
function stateIndexes({ table, quoted, ifNotExists }: TableDdl, orderingScope: string): string[] {
  const names = stateIndexNames(table);
  const ine = ifNotExists ? 'IF NOT EXISTS ' : '';
  return [
    `CREATE INDEX ${ine}"${names.claimable}" ON ${quoted} ("id") WHERE ${CLAIMABLE_SQL}`,
    `CREATE INDEX ${ine}"${names.processing}" ON ${quoted} ("claimed_at") WHERE status = 'PROCESSING'`,
    `CREATE INDEX ${ine}"${names.ordering}" ON ${quoted} (${orderingScope}"ordering_key", "id")
     WHERE ordering_key IS NOT NULL AND ${UNFINISHED_SQL}`,
  ];
}

function sqliteOutboxTableDdl(request: TableDdl): string[] {
  const names = outboxIndexNames(request.table);
  return [
    `CREATE TABLE ${request.ifNotExists ? 'IF NOT EXISTS ' : ''}${request.quoted} (
  ${ID_COLUMN},${OUTBOX_MESSAGE_COLUMNS}${STATE_COLUMNS}
  CONSTRAINT "${names.messageId}" UNIQUE ("message_id"),
  -- biz_key first: cancel(bizKey) without a type can use it too.
  CONSTRAINT "${names.typeBizKey}" UNIQUE ("biz_key", "message_type"),
  ${primaryKey(names.primaryKey)}
)`,
    ...stateIndexes(request, ''),
  ];
}

function sqliteInboxTableDdl(request: TableDdl): string[] {
  const names = inboxIndexNames(request.table);
  const ine = request.ifNotExists ? 'IF NOT EXISTS ' : '';
  return [
    `CREATE TABLE ${ine}${request.quoted} (
  ${ID_COLUMN},${INBOX_MESSAGE_COLUMNS}${STATE_COLUMNS}
  CONSTRAINT "${names.consumerMessageId}" UNIQUE ("consumer", "message_id"),
  ${primaryKey(names.primaryKey)}
)`,
    // Partial: most deliveries have no business key and need no entry here.
    `CREATE UNIQUE INDEX ${ine}"${names.consumerBizKey}" ON ${request.quoted} ("consumer", "biz_key", "message_type")
     WHERE biz_key IS NOT NULL`,
    ...stateIndexes(request, '"consumer", '),
  ];
}

/**
 * Schema version 2 of the outbox table: each message names its transport (its lane) and that
 * transport's address, and the claim index leads with the transport so that each lane's claim
 * is an index scan of its own claimable rows. SQLite has no `ADD COLUMN IF NOT EXISTS`: run only
 * on a table without the columns.
 */
function sqliteOutboxV2Ddl({ table, quoted }: TableDdl): string[] {
  const names = outboxIndexNames(table);
  const schema = schemaPrefix(quoted);
  return [
    `ALTER TABLE ${quoted} ADD COLUMN ${TRANSPORT_COLUMN}`,
    `ALTER TABLE ${quoted} ADD COLUMN ${DESTINATION_COLUMN}`,
    `CREATE INDEX IF NOT EXISTS ${schema}"${names.lane}" ON ${quoted.slice(schema.length)} ("transport", "id") WHERE ${CLAIMABLE_SQL}`,
    `DROP INDEX IF EXISTS ${schema}"${names.claimable}"`,
  ];
}

/**
 * Schema version 3 of the outbox table: none here. The business-key unique constraint is part of
 * the table, which only a rebuild changes, so version 3 is version 2 on SQLite.
 */
function sqliteOutboxV3Ddl(): string[] {
  return [];
}

/**
 * The archive of a table of `kind` (`retentionMode: 'archive'`): `request.table` names the
 * archived table (the archive's names derive from it), `request.quoted` the archive itself. Every
 * column of the table as it is at its latest schema version, without its unique keys (an id or a
 * message id may be archived twice), under a key of its own; indexed by archive time only, for
 * pruning: operators add the indexes their own queries need. A later schema version of the table
 * adds its columns here too.
 */
function sqliteArchiveTableDdl(kind: TableKind, { table, quoted, ifNotExists }: TableDdl): string[] {
  const names = archiveNames(table);
  const ine = ifNotExists ? 'IF NOT EXISTS ' : '';
  const schema = schemaPrefix(quoted);
  const messageColumns =
    kind === 'outbox'
      ? `${OUTBOX_MESSAGE_COLUMNS}${STATE_COLUMNS}\n  ${TRANSPORT_COLUMN},\n  ${DESTINATION_COLUMN},`
      : `${INBOX_MESSAGE_COLUMNS}${STATE_COLUMNS}`;
  return [
    `CREATE TABLE ${ine}${quoted} (
  "archive_id" INTEGER NOT NULL,
  "id" integer NOT NULL,${messageColumns}
  "archived_at" text NOT NULL DEFAULT (${SQLITE_NOW}),
  ${primaryKey(names.primaryKey, 'archive_id')}
)`,
    `CREATE INDEX ${ine}${schema}"${names.archivedAt}" ON ${quoted.slice(schema.length)} ("archived_at")`,
  ];
}

/** The `"schema".` a qualified name starts with, which SQLite wants on an index's name rather than its table's; '' for a plain name. */
function schemaPrefix(quoted: string): string {
  return quoted.includes('".') ? quoted.slice(0, quoted.lastIndexOf('".') + 2) : '';
}

/** The columns from `pragma_table_info`, in the attached schema the DataSource names where it names one. */
function sqliteTableColumnsQuery(table: TableLocation): SqlQuery {
  return table.schema
    ? { sql: 'SELECT name FROM pragma_table_info(?, ?)', params: [table.name, table.schema] }
    : { sql: 'SELECT name FROM pragma_table_info(?)', params: [table.name] };
}

/** SQLite's tables: INTEGER rowid keys, text times, partial indexes; no identifier limit. */
export const sqliteSchemaSql: SchemaSql = {
  outboxTableDdl: sqliteOutboxTableDdl,
  outboxV2Ddl: sqliteOutboxV2Ddl,
  outboxV3Ddl: sqliteOutboxV3Ddl,
  // The ordering index is partial already: version 4 is version 3 here.
  outboxV4Ddl: () => [],
  inboxTableDdl: sqliteInboxTableDdl,
  archiveTableDdl: sqliteArchiveTableDdl,
  tableColumnsQuery: sqliteTableColumnsQuery,
};
