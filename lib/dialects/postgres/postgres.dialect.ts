import type { DataSource, QueryRunner } from 'typeorm';
import type { StandbyGate } from '../../engine/standby-gate';
import type { ResolvedAwaitStandby } from '../../options/await-standby';
import { PostgresStandbyGate } from './postgres-standby-gate';
import { DatabaseDialect, IdentifierLimit, SqlQuery, TableLocation } from '../database-dialect';
import { InboxDialect } from '../inbox-dialect';
import { OutboxDialect } from '../outbox-dialect';
import { guardPostgresConnections } from './postgres-connection-guard';
import { postgresReportsNoTransaction } from './postgres-transaction-state';
import { PostgresInboxDialect } from './postgres-inbox.dialect';
import { PostgresOutboxDialect } from './postgres-outbox.dialect';
import {
  postgresArchiveTableDdl,
  postgresInboxTableDdl,
  postgresOutboxTableDdl,
  postgresOutboxV2Ddl,
  postgresOutboxV3Ddl,
  postgresOutboxV3PendingQuery,
  postgresOutboxV3RevertDdl,
} from './postgres-schema';

/** PostgreSQL: SKIP LOCKED claims, partial indexes, NOTIFY wake-ups. */
export class PostgresDialect implements DatabaseDialect {
  readonly description = 'postgres';
  readonly opensWorkerPool = true;
  /** NAMEDATALEN - 1. */
  readonly identifierLimit: IdentifierLimit = {
    database: 'PostgreSQL',
    max: 63,
    unit: 'bytes',
    beyond: 'truncates longer identifiers without an error, so the index names of a longer table name would collide',
  };

  /** `synchronous_commit=off` as a startup parameter, after any the application passes. */
  withUnflushedCommits(extra: Record<string, unknown>): Record<string, unknown> {
    const options = [extra.options, '-c synchronous_commit=off'].filter(Boolean).join(' ');
    return { ...extra, options };
  }

  guardConnections = guardPostgresConnections;

  /** The transaction status of the server's last ReadyForQuery, which node-postgres keeps. */
  reportsNoTransaction(_raw: unknown, runner: QueryRunner): boolean {
    return postgresReportsNoTransaction(runner);
  }

  standbyGate(workerDataSource: DataSource, settings: ResolvedAwaitStandby): StandbyGate {
    return new PostgresStandbyGate(workerDataSource, settings);
  }

  outbox(quotedTable: string): OutboxDialect {
    return new PostgresOutboxDialect(quotedTable);
  }

  inbox(quotedTable: string): InboxDialect {
    return new PostgresInboxDialect(quotedTable);
  }

  /**
   * From the catalog, through `to_regclass`: it resolves the name as the library's statements do
   * (the schema, else the search path), and unlike information_schema it lists every column
   * whatever the user's column privileges.
   */
  tableColumnsQuery(table: TableLocation): SqlQuery {
    return {
      sql: 'SELECT attname AS name FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped',
      params: [table.quoted],
    };
  }

  outboxTableDdl = postgresOutboxTableDdl;
  outboxV2Ddl = postgresOutboxV2Ddl;
  outboxV3Ddl = postgresOutboxV3Ddl;
  outboxV3RevertDdl = postgresOutboxV3RevertDdl;

  outboxV3PendingQuery(table: TableLocation): SqlQuery {
    return postgresOutboxV3PendingQuery(table.quoted, table.name);
  }

  inboxTableDdl = postgresInboxTableDdl;
  archiveTableDdl = postgresArchiveTableDdl;
}
