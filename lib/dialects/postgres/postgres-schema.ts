import { SchemaSql, TableDdl, TableLocation } from '../schema-sql';
import { SqlQuery } from '../sql-query';
import { archiveNames, inboxIndexNames, outboxIndexNames, stateIndexNames, TableKind } from '../../naming/index-names';
import { CLAIMABLE_SQL, UNFINISHED_SQL } from '../status-sql';

/** The state-machine columns both tables end with. */
const STATE_COLUMNS = `
  "status" character varying(20) NOT NULL,
  "attempts" integer NOT NULL DEFAULT 0,
  "max_attempts" integer NOT NULL,
  "next_attempt_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
  "claimed_at" TIMESTAMP WITH TIME ZONE,
  "claim_token" uuid,
  "claimed_by" character varying(200),
  "last_error" text,
  "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
  "processed_at" TIMESTAMP WITH TIME ZONE,`;

/** The outbox table's message columns, between its id and its state columns. */
const OUTBOX_MESSAGE_COLUMNS = `
  "message_id" uuid NOT NULL,
  "message_type" character varying(255) NOT NULL,
  "biz_key" character varying(255),
  "ordering_key" character varying(255),
  "exchange" character varying(255) NOT NULL,
  "routing_key" character varying(255) NOT NULL,
  "payload" json NOT NULL,
  "headers" json NOT NULL,`;

/** The inbox table's message columns, between its id and its state columns. */
const INBOX_MESSAGE_COLUMNS = `
  "consumer" character varying(200) NOT NULL,
  "message_id" character varying(255) NOT NULL,
  "message_type" character varying(255) NOT NULL DEFAULT '',
  "biz_key" character varying(255),
  "ordering_key" character varying(255),
  "exchange" character varying(255) NOT NULL,
  "routing_key" character varying(255) NOT NULL,
  "payload" text NOT NULL,
  "headers" json NOT NULL,`;

/** The columns schema version 2 added to the outbox table. */
const TRANSPORT_COLUMN = `"transport" character varying(100) NOT NULL DEFAULT 'default'`;
const DESTINATION_COLUMN = `"destination" character varying(255) NOT NULL DEFAULT ''`;

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

function postgresOutboxTableDdl(request: TableDdl): string[] {
  const names = outboxIndexNames(request.table);
  return [
    `CREATE TABLE ${request.ifNotExists ? 'IF NOT EXISTS ' : ''}${request.quoted} (
  "id" BIGSERIAL NOT NULL,${OUTBOX_MESSAGE_COLUMNS}${STATE_COLUMNS}
  CONSTRAINT "${names.messageId}" UNIQUE ("message_id"),
  -- biz_key first: cancel(bizKey) without a type can use it too.
  CONSTRAINT "${names.typeBizKey}" UNIQUE ("biz_key", "message_type"),
  CONSTRAINT "${names.primaryKey}" PRIMARY KEY ("id")
)`,
    ...stateIndexes(request, ''),
  ];
}

function postgresInboxTableDdl(request: TableDdl): string[] {
  const names = inboxIndexNames(request.table);
  const ine = request.ifNotExists ? 'IF NOT EXISTS ' : '';
  return [
    `CREATE TABLE ${ine}${request.quoted} (
  "id" BIGSERIAL NOT NULL,${INBOX_MESSAGE_COLUMNS}${STATE_COLUMNS}
  CONSTRAINT "${names.consumerMessageId}" UNIQUE ("consumer", "message_id"),
  CONSTRAINT "${names.primaryKey}" PRIMARY KEY ("id")
)`,
    // Partial: most deliveries have no business key and need no entry here.
    `CREATE UNIQUE INDEX ${ine}"${names.consumerBizKey}" ON ${request.quoted} ("consumer", "biz_key", "message_type")
     WHERE biz_key IS NOT NULL`,
    ...stateIndexes(request, '"consumer", '),
  ];
}

/**
 * Schema version 2 of the outbox table: each message names its transport (its lane) and that
 * transport's address, and a claim index leads with the transport so that each lane's claim is an
 * index scan of its own claimable rows, however many other lanes' rows wait. Version 1's claim
 * index on `(id)` stays: PostgreSQL has no index hints, and with statistics taken while a backlog
 * was all claimable (an outage's, a seeded one) it costs the lane index above a scan of the
 * primary key, which then walks past every row already sent: 90 ms a claim instead of 0.5 ms
 * with 50,000 sent rows behind. Beside the `(id)` index it never picks the primary key. Adding a
 * column with a constant default is a catalog change; the index build reads the table once
 * (claimable rows only) and blocks writes meanwhile. Every statement is idempotent.
 */
function postgresOutboxV2Ddl({ table, quoted }: TableDdl): string[] {
  const names = outboxIndexNames(table);
  return [
    `ALTER TABLE ${quoted} ADD COLUMN IF NOT EXISTS ${TRANSPORT_COLUMN}`,
    `ALTER TABLE ${quoted} ADD COLUMN IF NOT EXISTS ${DESTINATION_COLUMN}`,
    `CREATE INDEX IF NOT EXISTS "${names.lane}" ON ${quoted} ("transport", "id") WHERE ${CLAIMABLE_SQL}`,
  ];
}

/**
 * Schema version 3 of the outbox table: the `(biz_key, message_type)` unique key holds only the
 * rows that have a business key (`WHERE biz_key IS NOT NULL`), the same uniqueness, since rows
 * without one never conflicted (NULLs are distinct). A unique constraint has an entry for every
 * row, and each claim and settle rewrites every entry of its row (a non-HOT update): this takes
 * one index write off the insert, the claim and the settle of each message without a business key
 * (docs/performance.md). One statement, so atomic wherever it runs (a migration, start-up, a
 * script fed to psql): the old key is dropped and the new one built under one lock, with no moment
 * in between when a duplicate business key could be inserted. The build reads the table once
 * (its rows with a business key enter the index) and blocks writes meanwhile. Idempotent.
 */
function postgresOutboxV3Ddl({ table, quoted }: TableDdl): string[] {
  const { typeBizKey } = outboxIndexNames(table);
  return [
    `DO $outbox_v3$ BEGIN
  ALTER TABLE ${quoted} DROP CONSTRAINT IF EXISTS "${typeBizKey}";
  CREATE UNIQUE INDEX IF NOT EXISTS "${typeBizKey}" ON ${quoted} ("biz_key", "message_type") WHERE biz_key IS NOT NULL;
END $outbox_v3$`,
  ];
}

/** Version 3 undone: the business-key unique key as a constraint over every row again. One statement. */
function postgresOutboxV3RevertDdl({ table, quoted }: TableDdl): string[] {
  const { typeBizKey } = outboxIndexNames(table);
  // An index lives in its table's schema: qualified as the table is (table names have no dots).
  const schema = quoted.includes('.') ? `${quoted.slice(0, quoted.lastIndexOf('.'))}.` : '';
  return [
    `DO $outbox_v2$ BEGIN
  DROP INDEX IF EXISTS ${schema}"${typeBizKey}";
  ALTER TABLE ${quoted} ADD CONSTRAINT "${typeBizKey}" UNIQUE ("biz_key", "message_type");
END $outbox_v2$`,
  ];
}

/**
 * A row when the outbox table still has version 2's business-key unique constraint, so version 3
 * is pending; none once it is a partial index (or the table does not exist).
 */
function postgresOutboxV3PendingQuery({ quoted, name }: TableLocation): SqlQuery {
  return {
    sql: `SELECT 1 AS pending FROM pg_catalog.pg_constraint WHERE conrelid = to_regclass($1) AND conname = $2 AND contype = 'u'`,
    params: [quoted, outboxIndexNames(name).typeBizKey],
  };
}

/**
 * The archive of a table of `kind` (`retentionMode: 'archive'`): `request.table` names the
 * archived table (the archive's names derive from it), `request.quoted` the archive itself. Every
 * column of the table as it is at its latest schema version, without its unique keys (an id or a
 * message id may be archived twice), under a key of its own; indexed by archive time only, for
 * pruning: operators add the indexes their own queries need. A later schema version of the table
 * adds its columns here too.
 */
function postgresArchiveTableDdl(kind: TableKind, { table, quoted, ifNotExists }: TableDdl): string[] {
  const names = archiveNames(table);
  const ine = ifNotExists ? 'IF NOT EXISTS ' : '';
  const messageColumns =
    kind === 'outbox'
      ? `${OUTBOX_MESSAGE_COLUMNS}${STATE_COLUMNS}\n  ${TRANSPORT_COLUMN},\n  ${DESTINATION_COLUMN},`
      : `${INBOX_MESSAGE_COLUMNS}${STATE_COLUMNS}`;
  return [
    `CREATE TABLE ${ine}${quoted} (
  "archive_id" BIGSERIAL NOT NULL,
  "id" bigint NOT NULL,${messageColumns}
  "archived_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
  CONSTRAINT "${names.primaryKey}" PRIMARY KEY ("archive_id")
)`,
    `CREATE INDEX ${ine}"${names.archivedAt}" ON ${quoted} ("archived_at")`,
  ];
}

/**
 * The columns from the catalog, through `to_regclass`: it resolves the name as the library's
 * statements do (the schema, else the search path), and unlike information_schema it lists every
 * column whatever the user's column privileges.
 */
function postgresTableColumnsQuery(table: TableLocation): SqlQuery {
  return {
    sql: 'SELECT attname AS name FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped',
    params: [table.quoted],
  };
}

/** PostgreSQL's tables: partial indexes, and the version 3 that makes the business key one of them. */
/** The advisory lock key of the library's DDL: "outbox" in ASCII, away from small keys applications pick. */
const SCHEMA_LOCK_KEY = 0x6f7574626f78;

export const postgresSchemaSql: SchemaSql = {
  outboxTableDdl: postgresOutboxTableDdl,
  outboxV2Ddl: postgresOutboxV2Ddl,
  outboxV3Ddl: postgresOutboxV3Ddl,
  outboxV3PendingQuery: postgresOutboxV3PendingQuery,
  outboxV3RevertDdl: postgresOutboxV3RevertDdl,
  // The ordering index is partial already: version 4 is version 3 here.
  outboxV4Ddl: () => [],
  inboxTableDdl: postgresInboxTableDdl,
  archiveTableDdl: postgresArchiveTableDdl,
  tableColumnsQuery: postgresTableColumnsQuery,
  // A session-level advisory lock: a connection that dies lets it go. One key per database, as
  // creating and upgrading take a moment once per deploy.
  schemaLock: {
    acquire: `SELECT pg_advisory_lock(${SCHEMA_LOCK_KEY})`,
    release: `SELECT pg_advisory_unlock(${SCHEMA_LOCK_KEY})`,
  },
  /** NAMEDATALEN - 1. */
  identifierLimit: {
    database: 'PostgreSQL',
    max: 63,
    unit: 'bytes',
    beyond: 'truncates longer identifiers without an error, so the index names of a longer table name would collide',
  },
};
