import { EntitySchema } from 'typeorm';
import { assertTableName, DEFAULT_OUTBOX_TABLE } from '../naming/table-names';
import { OutboxMessageRecord } from './message-records';
import { MESSAGE_COLUMNS, STATE_COLUMNS, textColumn } from './record-columns';
import { readModelOf } from './read-model';

/**
 * The outbox table `tableName` as a TypeORM entity, to read it with repositories and query
 * builders: `dataSource.getRepository(outboxMessageEntity())`. The same object for the same name,
 * so that it can be listed, registered and injected (`@InjectRepository`) from several places.
 *
 * A read model: the library writes the rows (`OutboxService`, `OutboxAdmin`), and a write
 * through the entity would bypass its state machine. Left out of `synchronize` and of
 * `migration:generate`: the library's DDL and migrations make the table.
 *
 * @param tableName the module's `tableName`, default `outbox_message`
 */
export function outboxMessageEntity(tableName: string = DEFAULT_OUTBOX_TABLE): EntitySchema<OutboxMessageRecord> {
  return readModelOf('OutboxMessageRecord', assertTableName('tableName', tableName), {
    ...MESSAGE_COLUMNS,
    transport: textColumn('transport'),
    destination: textColumn('destination'),
    payload: { name: 'payload', type: 'json' },
    ...STATE_COLUMNS,
  });
}
