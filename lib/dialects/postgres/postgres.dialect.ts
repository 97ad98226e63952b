import type { DataSource, QueryRunner } from 'typeorm';
import type { StandbyGate } from '../../engine/standby-gate';
import type { ResolvedAwaitStandby } from '../../options/await-standby';
import { PostgresStandbyGate } from './postgres-standby-gate';
import { DatabaseDialect } from '../database-dialect';
import { InboxDialect } from '../inbox-dialect';
import { OutboxDialect } from '../outbox-dialect';
import { guardPostgresConnections } from './postgres-connection-guard';
import { postgresReportsNoTransaction } from './postgres-transaction-state';
import { PostgresInboxDialect } from './postgres-inbox.dialect';
import { PostgresOutboxDialect } from './postgres-outbox.dialect';
import { postgresSchemaSql } from './postgres-schema';

/** PostgreSQL: SKIP LOCKED claims, partial indexes, NOTIFY wake-ups. */
export class PostgresDialect implements DatabaseDialect {
  readonly description = 'postgres';
  readonly opensWorkerPool = true;
  readonly schemaSql = postgresSchemaSql;

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
}
