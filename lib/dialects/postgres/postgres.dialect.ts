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

  outbox(quotedTable: string): OutboxDialect {
    return new PostgresOutboxDialect(quotedTable);
  }

  inbox(quotedTable: string): InboxDialect {
    return new PostgresInboxDialect(quotedTable);
  }

  outboxTableDdl = postgresOutboxTableDdl;
  inboxTableDdl = postgresInboxTableDdl;
}
