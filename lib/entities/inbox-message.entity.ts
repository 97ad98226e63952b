import { EntitySchema } from 'typeorm';
import { assertTableName, DEFAULT_INBOX_TABLE } from '../naming/table-names';
import { InboxMessageRecord } from './message-records';
import { MESSAGE_COLUMNS, STATE_COLUMNS, textColumn } from './record-columns';
import { readModelOf } from './read-model';

/**
 * The inbox table `inboxTableName` as a TypeORM entity, to read it with repositories and query
 * builders: `dataSource.getRepository(inboxMessageEntity())`. The same object for the same name.
 *
 * A read model, like `outboxMessageEntity`: the library writes the rows, and the library's DDL
 * makes the table.
 *
 * @param inboxTableName the module's `inboxTableName`, default `inbox_message`
 */
export function inboxMessageEntity(inboxTableName: string = DEFAULT_INBOX_TABLE): EntitySchema<InboxMessageRecord> {
  return readModelOf('InboxMessageRecord', assertTableName('inboxTableName', inboxTableName), {
    ...MESSAGE_COLUMNS,
    consumer: textColumn('consumer'),
    // Text, never parsed: the body as received, which may not be JSON.
    payload: { name: 'payload', type: 'text' },
    ...STATE_COLUMNS,
  });
}
