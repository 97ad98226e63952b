import { SchemaSql, TableDdl, TableLocation } from '../schema-sql';
import { SqlQuery } from '../sql-query';
import { UNFINISHED_SQL } from '../status-sql';
import { archiveNames, inboxIndexNames, outboxIndexNames, stateIndexNames, TableKind } from '../../naming/index-names';
import { MysqlServer } from './mysql-server';

/**
 * The state-machine columns both tables end with. Times are DATETIME(6) holding UTC. The
 * library's statements write every time from `UTC_TIMESTAMP(6)` themselves; the defaults are for
 * rows inserted by hand, where the server has expression defaults (CURRENT_TIMESTAMP, the only
 * other one, follows the session's time zone).
 */
function stateColumns(server: MysqlServer): string {
  const defaultNow = server.expressionDefaults ? ' DEFAULT (UTC_TIMESTAMP(6))' : '';
  return `
  \`status\` varchar(20) NOT NULL,
  \`attempts\` int NOT NULL DEFAULT 0,
  \`max_attempts\` int NOT NULL,
  \`next_attempt_at\` datetime(6) NOT NULL${defaultNow},
  \`claimed_at\` datetime(6) NULL,
  \`claim_token\` char(36) NULL,
  \`claimed_by\` varchar(200) NULL,
  \`last_error\` mediumtext NULL,
  \`created_at\` datetime(6) NOT NULL${defaultNow},
  \`processed_at\` datetime(6) NULL,`;
}

/** The outbox table's message columns, between its id and its state columns. */
const OUTBOX_MESSAGE_COLUMNS = `
  \`message_id\` char(36) NOT NULL,
  \`message_type\` varchar(255) NOT NULL,
  \`biz_key\` varchar(255) NULL,
  \`ordering_key\` varchar(255) NULL,
  \`exchange\` varchar(255) NOT NULL,
  \`routing_key\` varchar(255) NOT NULL,
  \`payload\` longtext NOT NULL,
  \`headers\` longtext NOT NULL,`;

/** The inbox table's message columns, between its id and its state columns. */
const INBOX_MESSAGE_COLUMNS = `
  \`consumer\` varchar(200) NOT NULL,
  \`message_id\` varchar(255) NOT NULL,
  \`message_type\` varchar(255) NOT NULL DEFAULT '',
  \`biz_key\` varchar(255) NULL,
  \`ordering_key\` varchar(255) NULL,
  \`exchange\` varchar(255) NOT NULL,
  \`routing_key\` varchar(255) NOT NULL,
  \`payload\` longtext NOT NULL,
  \`headers\` longtext NOT NULL,`;

/** The columns schema version 2 added to the outbox table. */
const TRANSPORT_COLUMN = "`transport` varchar(100) NOT NULL DEFAULT 'default'";
const DESTINATION_COLUMN = "`destination` varchar(255) NOT NULL DEFAULT ''";

/**
 * The claim, reclaim and ordering indexes. MySQL has no partial indexes, so each leads with what
 * keeps retained DONE rows out of the scans: the claim walks `(status, id)` for one claimable
 * status at a time, in id order, and reads `next_attempt_at` from the index; the ordering rule
 * probes `(key, status)` for each unfinished status.
 */
function stateIndexes(table: string, orderingScope: string): string {
  const names = stateIndexNames(table);
  return `
  KEY \`${names.claimable}\` (\`status\`, \`id\`, \`next_attempt_at\`),
  KEY \`${names.processing}\` (\`status\`, \`claimed_at\`),
  KEY \`${names.ordering}\` (${orderingScope}\`ordering_key\`, \`status\`, \`id\`)`;
}

/**
 * The table options. Binary collation (see `MysqlServer.collation`); DYNAMIC rows for index
 * entries up to 3072 bytes (the inbox's business key: (200 + 255 + 255) × 4 bytes of utf8mb4).
 */
function tableOptions(collation: string): string {
  return `ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=${collation} ROW_FORMAT=DYNAMIC`;
}

/**
 * Payload and headers are LONGTEXT, not JSON: MySQL's JSON type stores a parsed document and
 * gives back its own rendering (keys reordered, spaces added), while the outbox sends the text as
 * stored, byte for byte. The library writes only `JSON.stringify` output. One statement with its
 * indexes inline, so that `IF NOT EXISTS` makes the whole of it idempotent (MySQL has no
 * `CREATE INDEX IF NOT EXISTS`). The primary key is always named PRIMARY.
 */
function mysqlOutboxTableDdl(request: TableDdl, server: MysqlServer): string[] {
  const names = outboxIndexNames(request.table);
  return [
    `CREATE TABLE ${request.ifNotExists ? 'IF NOT EXISTS ' : ''}${request.quoted} (
  \`id\` bigint NOT NULL AUTO_INCREMENT,${OUTBOX_MESSAGE_COLUMNS}${stateColumns(server)}
  PRIMARY KEY (\`id\`),
  UNIQUE KEY \`${names.messageId}\` (\`message_id\`),
  UNIQUE KEY \`${names.typeBizKey}\` (\`biz_key\`, \`message_type\`),${stateIndexes(request.table, '')}
) ${tableOptions(server.collation)}`,
  ];
}

function mysqlInboxTableDdl(request: TableDdl, server: MysqlServer): string[] {
  const names = inboxIndexNames(request.table);
  return [
    `CREATE TABLE ${request.ifNotExists ? 'IF NOT EXISTS ' : ''}${request.quoted} (
  \`id\` bigint NOT NULL AUTO_INCREMENT,${INBOX_MESSAGE_COLUMNS}${stateColumns(server)}
  PRIMARY KEY (\`id\`),
  UNIQUE KEY \`${names.consumerMessageId}\` (\`consumer\`, \`message_id\`),
  -- Rows without a business key hold NULL, which a unique key never counts as a duplicate.
  UNIQUE KEY \`${names.consumerBizKey}\` (\`consumer\`, \`biz_key\`, \`message_type\`),${stateIndexes(request.table, '`consumer`, ')}
) ${tableOptions(server.collation)}`,
  ];
}

/**
 * Schema version 2 of the outbox table: each message names its transport (its lane) and that
 * transport's address, and the claim index leads with the transport so that each lane's claim
 * walks `(transport, status, id)` for its own rows only. One ALTER: MySQL 8 and MariaDB 10.3+
 * add the columns in place and build the index online. MySQL has no `ADD COLUMN IF NOT EXISTS`:
 * run only on a table without the columns.
 */
function mysqlOutboxV2Ddl({ table, quoted }: TableDdl): string[] {
  const names = outboxIndexNames(table);
  return [
    `ALTER TABLE ${quoted}
  ADD COLUMN ${TRANSPORT_COLUMN},
  ADD COLUMN ${DESTINATION_COLUMN},
  ADD KEY \`${names.lane}\` (\`transport\`, \`status\`, \`id\`, \`next_attempt_at\`),
  DROP KEY \`${names.claimable}\``,
  ];
}

/**
 * The column schema version 4 adds to the outbox table: the row's ordering key while the row is
 * unfinished, NULL once it is finished (or when it has none). VIRTUAL: computed on read, stored
 * only in its index. An archive has no such column; archiving copies the listed columns only.
 */
export const UNFINISHED_ORDERING_KEY = 'unfinished_ordering_key';
const UNFINISHED_ORDERING_KEY_COLUMN = `\`${UNFINISHED_ORDERING_KEY}\` varchar(255) AS (IF(${UNFINISHED_SQL}, \`ordering_key\`, NULL)) VIRTUAL`;

/**
 * Schema version 4 of the outbox table, from version 3 (which is version 2 here): the ordering
 * rule's index holds the generated key of unfinished rows, `(unfinished_ordering_key, id)`, in
 * place of `(ordering_key, status, id)`. InnoDB touches a secondary index on an update only when
 * the row's entry in it changes: with `status` in the key every claim and every settle moved
 * each row's entry, keyed or not (unkeyed rows hold NULL, which InnoDB indexes); now an unkeyed
 * row's entry stays NULL from insert to delete, and a keyed row's moves once, when it finishes.
 * One probe per candidate finds the key's unfinished rows before it, never its finished history.
 *
 * The ordering index keeps its name, as `(ordering_key, id)`: claims and settles never change
 * that entry, and processes still running the previous release (a rolling deploy, or one started
 * on version 3 and left running across the upgrade) force it by name in their ordering probes,
 * which without it would fail; with it they stay right, only slower on keys with long histories.
 *
 * The same ALTER drops the processing index `(status, claimed_at)`, which every claim and every
 * settle also moved, and puts `status` first in the lane index, `(status, transport, id,
 * next_attempt_at)`: a claim walks one status of one transport in id order through either order,
 * and the status-leading one also finds the PROCESSING rows (the stuck detector, the stale count,
 * a claim given back) and serves the operators' status filters and counts, which the processing
 * index served. The lane index keeps its name, which processes of the previous release force in
 * their claims; their shutdown's give-back of a claim forced the processing index and fails
 * without it, and the rows it would have given back are reclaimed when their lease runs out.
 *
 * One ALTER, so atomic: a table has the column and the new indexes, or none of them, and the
 * column alone tells the version. It builds the indexes in place, reading the table once, but
 * blocks writes to it meanwhile (MariaDB 10.11 refuses LOCK=NONE when a virtual column is added
 * together with other changes). MySQL has no `ADD COLUMN IF NOT EXISTS`: run only on a table
 * without the column.
 */
function mysqlOutboxV4Ddl({ table, quoted }: TableDdl): string[] {
  const names = outboxIndexNames(table);
  return [
    `ALTER TABLE ${quoted}
  ADD COLUMN ${UNFINISHED_ORDERING_KEY_COLUMN},
  ADD KEY \`${names.unfinished}\` (\`${UNFINISHED_ORDERING_KEY}\`, \`id\`),
  DROP KEY \`${names.ordering}\`,
  ADD KEY \`${names.ordering}\` (\`ordering_key\`, \`id\`),
  DROP KEY \`${names.lane}\`,
  ADD KEY \`${names.lane}\` (\`status\`, \`transport\`, \`id\`, \`next_attempt_at\`),
  DROP KEY \`${names.processing}\``,
  ];
}

/** Version 4 undone: the ordering, lane and processing indexes of version 3 again, without the generated column. One ALTER. */
function mysqlOutboxV4RevertDdl({ table, quoted }: TableDdl): string[] {
  const names = outboxIndexNames(table);
  return [
    `ALTER TABLE ${quoted}
  DROP KEY \`${names.unfinished}\`,
  DROP COLUMN \`${UNFINISHED_ORDERING_KEY}\`,
  DROP KEY \`${names.ordering}\`,
  ADD KEY \`${names.ordering}\` (\`ordering_key\`, \`status\`, \`id\`),
  DROP KEY \`${names.lane}\`,
  ADD KEY \`${names.lane}\` (\`transport\`, \`status\`, \`id\`, \`next_attempt_at\`),
  ADD KEY \`${names.processing}\` (\`status\`, \`claimed_at\`)`,
  ];
}

/**
 * The archive of a table of `kind` (`retentionMode: 'archive'`): `request.table` names the
 * archived table (the archive's names derive from it), `request.quoted` the archive itself. Every
 * column of the table as it is at its latest schema version, without its unique keys (an id or a
 * message id may be archived twice), under a key of its own; indexed by archive time only, for
 * pruning: operators add the indexes their own queries need. A later schema version of the table
 * adds its columns here too. One statement, as the tables' own.
 */
function mysqlArchiveTableDdl(kind: TableKind, { table, quoted, ifNotExists }: TableDdl, server: MysqlServer): string[] {
  const names = archiveNames(table);
  const defaultNow = server.expressionDefaults ? ' DEFAULT (UTC_TIMESTAMP(6))' : '';
  const messageColumns =
    kind === 'outbox'
      ? `${OUTBOX_MESSAGE_COLUMNS}${stateColumns(server)}\n  ${TRANSPORT_COLUMN},\n  ${DESTINATION_COLUMN},`
      : `${INBOX_MESSAGE_COLUMNS}${stateColumns(server)}`;
  return [
    `CREATE TABLE ${ifNotExists ? 'IF NOT EXISTS ' : ''}${quoted} (
  \`archive_id\` bigint NOT NULL AUTO_INCREMENT,
  \`id\` bigint NOT NULL,${messageColumns}
  \`archived_at\` datetime(6) NOT NULL${defaultNow},
  PRIMARY KEY (\`archive_id\`),
  KEY \`${names.archivedAt}\` (\`archived_at\`)
) ${tableOptions(server.collation)}`,
  ];
}

/** The table in the DataSource's database (the connection's current one). */
function mysqlTableColumnsQuery(table: TableLocation): SqlQuery {
  return {
    sql: 'SELECT column_name AS name FROM information_schema.columns WHERE table_schema = COALESCE(?, DATABASE()) AND table_name = ?',
    params: [table.schema ?? null, table.name],
  };
}

/** The tables of MySQL 8 or MariaDB, as `server` supports them. */
export function mysqlSchemaSql(server: MysqlServer): SchemaSql {
  return {
    outboxTableDdl: (request) => mysqlOutboxTableDdl(request, server),
    outboxV2Ddl: mysqlOutboxV2Ddl,
    // No partial indexes: version 3 is version 2 here.
    outboxV3Ddl: () => [],
    outboxV4Ddl: mysqlOutboxV4Ddl,
    outboxV4Column: UNFINISHED_ORDERING_KEY,
    outboxV4RevertDdl: mysqlOutboxV4RevertDdl,
    inboxTableDdl: (request) => mysqlInboxTableDdl(request, server),
    archiveTableDdl: (kind, request) => mysqlArchiveTableDdl(kind, request, server),
    tableColumnsQuery: mysqlTableColumnsQuery,
    identifierLimit: {
      database: server.flavor === 'mariadb' ? 'MariaDB' : 'MySQL',
      max: 64,
      unit: 'characters',
      beyond: 'refuses longer identifiers, so creating the table would fail',
    },
  };
}
