export { OutboxModule } from './outbox.module';
export type { OutboxModuleStaticOptions } from './outbox-module-definition';
export { OutboxModuleOptions } from './options/outbox-module-options';
export type { OutboxModuleOptionsInput } from './options/outbox-module-options';
export { validateOutboxOptions } from './options/validate-options';
export { OutboxService } from './outbox/outbox.service';
export { OutboxDispatcher } from './outbox/outbox.dispatcher';
export type { DispatcherStats } from './outbox/outbox.dispatcher';
export { StuckDetector } from './maintenance/stuck-detector';
export type { StuckCheckReport } from './maintenance/stuck-detector';
export { MessageStatus } from './message/message-status';
export type { OutboxMessage, OutboxWriteOptions, PublishResult } from './message/outbox-message';
export type { OutboxTransport, OutgoingMessage } from './transport/outbox-transport';
export { RabbitMqOutboxTransport } from './transport/rabbitmq.transport';
export { OUTBOX_TRANSPORT, OUTBOX_OPTIONS } from './outbox.constants';
export { backoffDelayMs } from './retry/backoff';
export type { BackoffPolicy } from './retry/backoff';
export { classifyFailure } from './retry/error-classifier';
export type { FailureVerdict } from './retry/error-classifier';
export { createOutboxMessageEntity, OutboxMessageEntity } from './entities/outbox-message.entity';
export type { OutboxMessageRecord } from './entities/outbox-message.entity';
export { createOutboxTableMigration, OUTBOX_MIGRATIONS } from './migrations/create-outbox-table.migration';
export type { MigrationClass } from './migrations/create-outbox-table.migration';
export * from './errors';

import { OutboxMessageEntity } from './entities/outbox-message.entity';
/** The library's entities for the default table names, for apps that list entities by hand. */
export const OUTBOX_ENTITIES = [OutboxMessageEntity];
