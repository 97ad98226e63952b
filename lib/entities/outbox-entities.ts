import { EntitySchema } from 'typeorm';
import { DEFAULT_INBOX_TABLE, DEFAULT_OUTBOX_TABLE } from '../naming/table-names';
import { inboxMessageEntity } from './inbox-message.entity';
import { InboxMessageRecord, OutboxMessageRecord } from './message-records';
import { outboxMessageEntity } from './outbox-message.entity';

/** The table names of one `OutboxModule`, as its static options name them. */
export interface OutboxEntityTables {
  /** Default `outbox_message`. */
  tableName?: string;
  /** Default `inbox_message`. */
  inboxTableName?: string;
}

/**
 * The read models of one module's two tables, for a DataSource's `entities` where it does not use
 * `autoLoadEntities` (with it, `OutboxModule` registers them itself):
 * `entities: [...myEntities, ...outboxEntities({ tableName: 'billing_outbox', inboxTableName: 'billing_inbox' })]`.
 */
export function outboxEntities({ tableName = DEFAULT_OUTBOX_TABLE, inboxTableName = DEFAULT_INBOX_TABLE }: OutboxEntityTables = {}): [
  EntitySchema<OutboxMessageRecord>,
  EntitySchema<InboxMessageRecord>,
] {
  return [outboxMessageEntity(tableName), inboxMessageEntity(inboxTableName)];
}

/** The read models of the tables of the default names (`outbox_message`, `inbox_message`). */
export const OUTBOX_ENTITIES = outboxEntities();
