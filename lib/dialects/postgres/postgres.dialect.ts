import { DatabaseDialect } from '../database-dialect';
import { InboxDialect } from '../inbox-dialect';
import { OutboxDialect } from '../outbox-dialect';
import { PostgresInboxDialect } from './postgres-inbox.dialect';
import { PostgresOutboxDialect } from './postgres-outbox.dialect';
import { postgresInboxTableDdl, postgresOutboxTableDdl } from './postgres-schema';

/** PostgreSQL: SKIP LOCKED claims, partial indexes, NOTIFY wake-ups. */
export class PostgresDialect implements DatabaseDialect {
  readonly description = 'postgres';
  readonly opensWorkerPool = true;

  /** `synchronous_commit=off` as a startup parameter, after any the application passes. */
  withUnflushedCommits(extra: Record<string, unknown>): Record<string, unknown> {
    const options = [extra.options, '-c synchronous_commit=off'].filter(Boolean).join(' ');
    return { ...extra, options };
  }

  outbox(quotedTable: string): OutboxDialect {
    return new PostgresOutboxDialect(quotedTable);
  }

  inbox(quotedTable: string): InboxDialect {
    return new PostgresInboxDialect(quotedTable);
  }

  outboxTableDdl = postgresOutboxTableDdl;
  inboxTableDdl = postgresInboxTableDdl;
}
