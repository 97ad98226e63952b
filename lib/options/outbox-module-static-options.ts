import type { Type } from '@nestjs/common';
import type { OutboxTransport } from '../message/outbox-transport';
import type { OutboxTransportEntry } from './transport-lanes';

/**
 * Options fixed when the module is imported, outside any async factory, because they shape the
 * module itself: which entities are registered and on which DataSource.
 */
export interface OutboxModuleStaticOptions {
  /**
   * Outbox table name (a plain SQL identifier). Default `outbox_message`. Index names derive from
   * it, so it has at most 47 characters on PostgreSQL, 48 on MySQL/MariaDB, 63 on SQLite.
   */
  tableName?: string;
  /**
   * Inbox table name (a plain SQL identifier, other than `tableName`). Default `inbox_message`.
   * At most 40 characters on PostgreSQL, 41 on MySQL/MariaDB, 63 on SQLite.
   */
  inboxTableName?: string;
  /** Name of the TypeORM DataSource holding the outbox (as given to TypeOrmModule.forRoot). */
  dataSourceName?: string;
  /**
   * The class (not an instance: Nest creates it) of the transport that sends messages.
   * Default: RabbitMQ through @golevelup/nestjs-rabbitmq.
   */
  transport?: Type<OutboxTransport>;
  /**
   * Several transports, by name, each dispatching in a lane of its own (its own claim loops,
   * batch size, concurrency and polling, claiming only its own messages), so that a slow or
   * broken transport never holds up another's messages. Instead of `transport`. A message names
   * its transport in `publish()`, or `route()` or `defaultTransport` chooses one.
   * @example transports: { default: RabbitMqOutboxTransport, partner: { transport: HttpOutboxTransport.for({ endpoints }), dispatchConcurrency: 2 } }
   */
  transports?: Record<string, OutboxTransportEntry>;
  /**
   * The transport of messages published without one that `route()` did not place. Default: the
   * only transport, or the one named `default`.
   */
  defaultTransport?: string;
  /** Register OutboxService globally. Default true. */
  isGlobal?: boolean;
  /**
   * The outbox's name, for an application with several outboxes (e.g. one per DataSource). A
   * named outbox's services are injected by tokens of its name (`@InjectOutbox(name)`,
   * `getOutboxServiceToken(name)`…), `@InboxHandler({ outbox: name })` and
   * `@WebhookInbox({ outbox: name })` choose it, and its scheduler jobs, metrics and logs carry
   * the name. Default: the default outbox, injected by class (`OutboxService`), which `'default'`
   * also names. It is not taken from `dataSourceName`: an outbox is what users inject, a
   * DataSource what holds it, and one DataSource can hold two outboxes.
   */
  name?: string;
  /**
   * The `@nestjs-cls/transactional` connection (`ClsPluginTransactional({ connectionName })`)
   * whose transactions the outbox joins: `publish()` writes in the active transaction of that
   * connection (`@Transactional(connectionName)`), and the inbox runs its handlers in its
   * transactions. Its adapter must work on the outbox's DataSource. Default: the unnamed connection.
   */
  transactionConnectionName?: string;
}
