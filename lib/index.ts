/**
 * The main entry: what an application needs to publish and receive messages. Operating an outbox
 * is in `nestjs-outbox/admin`, the transports and their contract in `nestjs-outbox/transports`,
 * HTTP intake and Standard Webhooks in `nestjs-outbox/webhooks`.
 *
 * @module nestjs-outbox
 */

// The module and its options.
export { OutboxModule } from './module/outbox.module';
export { OutboxModuleOptions } from './options/outbox-module-options';
export type { OutboxModuleOptionsInput, RetentionMode } from './options/outbox-module-options';
export type { OutboxModuleAsyncOptions, OutboxOptionsFactory, OutboxRuntimeOptions } from './options/outbox-module-async-options';
export type { OutboxModuleStaticOptions } from './options/outbox-module-static-options';
export type { AwaitStandbyOptions } from './options/await-standby';
export type { OutboxLaneOptions, OutboxTransportEntry } from './options/transport-lanes';

// Several outboxes in one application: names and the tokens of each one's service.
export { DEFAULT_OUTBOX_NAME } from './naming/outbox-name';
export type { OutboxToken } from './naming/outbox-name';
export { InjectOutbox } from './module/inject-outbox.decorator';
export { getOutboxServiceToken } from './module/outbox-tokens';

// Publishing: the service, what it takes and what it returns.
export { OutboxService } from './outbox/outbox.service';
export type { OutboxMessage, OutboxWriteOptions, PublishResult } from './message/outbox-message';
export { MessageStatus } from './message/message-status';

// Receiving: the inbox decorator for RabbitMQ handlers.
export { InboxHandler } from './inbox/inbox-handler.decorator';
export type { InboxHandlerOptions, InboxMode } from './inbox/inbox-handler-options';
export type { AmqpMessage } from './inbox/amqp-message';

// Errors an application catches or throws (a handler's NonRetryableError, RetryLaterError).
export {
  DatabaseTimeoutError,
  InputRejectedError,
  NonRetryableError,
  OutboxError,
  OutboxMessageInvalidError,
  OutboxOptionsError,
  OutboxOutsideTransactionError,
  OutboxSchemaError,
  OutboxTableMissingError,
  OutboxTransactionRolledBackError,
  RetryLaterError,
  StandbyLagError,
} from './errors';
export type { ServerTransactionEnding } from './errors';

// What happens to messages, as events on node:diagnostics_channel, and their shapes.
export { OUTBOX_EVENTS } from './observability/outbox-events';
export type {
  AbandonedEvent,
  ClaimLostEvent,
  DuplicateEvent,
  HandledEvent,
  ManualRequiredEvent,
  OutboxEventMap,
  OutboxEventName,
  OutboxEventScope,
  PublishedEvent,
  ReceivedEvent,
  RetryScheduledEvent,
  SentEvent,
} from './observability/outbox-events';

// The tables' migrations, for an application's TypeORM migrations.
export {
  createInboxTableMigration,
  createOutboxTableMigration,
  createOutboxTableV2Migration,
  createOutboxTableV3Migration,
  createOutboxTableV4Migration,
  OUTBOX_MIGRATIONS,
} from './schema/table-migrations';
export type { MigrationClass } from './schema/table-migrations';
export { createArchiveTablesMigration } from './schema/archive-tables-migration';
export type { ArchiveTablesMigrationOptions } from './schema/archive-tables-migration';

// Read models: TypeORM entities over the tables, for queries of an application's own.
export { outboxMessageEntity } from './entities/outbox-message.entity';
export { inboxMessageEntity } from './entities/inbox-message.entity';
export { OUTBOX_ENTITIES, outboxEntities } from './entities/outbox-entities';
export type { OutboxEntityTables } from './entities/outbox-entities';
export { fitReadModels } from './entities/fit-read-models';
export type { InboxMessageRecord, MessageRecord, OutboxMessageRecord } from './entities/message-records';
