export { OutboxModule } from './module/outbox.module';
export type { OutboxModuleStaticOptions } from './options/outbox-module-static-options';
export {
  getInboxWorkerToken,
  getOutboxAdminToken,
  getOutboxDispatcherToken,
  getOutboxServiceToken,
  getOutboxTransportsToken,
  getOutboxTransportToken,
  getRetentionToken,
  getStuckDetectorToken,
} from './module/outbox-tokens';
export type { OutboxToken } from './naming/outbox-name';
export { InjectOutbox, InjectOutboxAdmin } from './module/inject-outbox.decorator';
export { DEFAULT_OUTBOX_NAME } from './naming/outbox-name';
export { OutboxModuleOptions } from './options/outbox-module-options';
export type { OutboxModuleOptionsInput, RetentionMode } from './options/outbox-module-options';
export type { OutboxModuleAsyncOptions, OutboxOptionsFactory, OutboxRuntimeOptions } from './options/outbox-module-async-options';
export type { AwaitStandbyOptions } from './options/await-standby';
export { OutboxService } from './outbox/outbox.service';
export { OutboxDispatcher } from './outbox/outbox.dispatcher';
export type { DispatcherStats } from './outbox/outbox.dispatcher';
export { StuckDetector } from './maintenance/stuck-detector';
export type { StuckCheckReport } from './maintenance/stuck-detector';
export { MessageStatus } from './message/message-status';
export type { OutboxMessage, OutboxWriteOptions, PublishResult } from './message/outbox-message';
export type { AddressProblem, MessageAddress, OutboxTransport, OutgoingMessage, ServerAddress } from './message/outbox-transport';
export type { OutboxTransports, TransportLane } from './transport/outbox-transports';
export type { OutboxLaneOptions, OutboxTransportEntry } from './options/transport-lanes';
export { ATTEMPT_HEADER, deliveryHeaders, PUBLISHED_AT_HEADER } from './transport/delivery-headers';
export { RabbitMqOutboxTransport } from './transport/rabbitmq.transport';
export { HttpOutboxTransport } from './transport/http/http-outbox.transport';
export { ClientProxyOutboxTransport } from './transport/client-proxy/client-proxy-outbox.transport';
export type { ClientProxyOutboxTransportOptions } from './transport/client-proxy/client-proxy-options';
export type { OutboxEnvelope } from './transport/client-proxy/outbox-envelope';
export type { EventClient } from './transport/client-proxy/event-client';
export type { HttpEndpoint, HttpOutboxTransportOptions } from './transport/http/http-endpoint';
export { OUTBOX_TRANSPORT, OUTBOX_TRANSPORTS, OUTBOX_OPTIONS } from './naming/injection-tokens';
export {
  createInboxTableMigration,
  createOutboxTableMigration,
  createOutboxTableV2Migration,
  createOutboxTableV3Migration,
  OUTBOX_MIGRATIONS,
} from './schema/table-migrations';
export type { MigrationClass } from './schema/table-migrations';
export { createArchiveTablesMigration } from './schema/archive-tables-migration';
export type { ArchiveTablesMigrationOptions } from './schema/archive-tables-migration';
export { OutboxAdmin } from './admin/outbox-admin.service';
export type { InboxStats, OutboxActivity, OutboxStats, OutboxTableStats, TableStats } from './admin/outbox-stats';
export type { MessageChange } from './engine/state-table';
export type { MessageDetail, ParkedKey, RecentActivity } from './engine/message-views';
export type { OutboxMessageQuery, OutboxMessageState } from './engine/message-views';
export { InboxHandler } from './inbox/inbox-handler.decorator';
export type { InboxHandlerOptions, InboxMode } from './inbox/inbox-handler-options';
export type { AmqpMessage } from './inbox/amqp-message';
export { InboxWorker } from './inbox/inbox.worker';
export { WebhookInbox } from './webhooks/webhook-inbox.decorator';
export type { WebhookInboxOptions, WebhookMessageIdSource } from './webhooks/webhook-inbox-options';
export type { WebhookRequest } from './webhooks/webhook-request';
export { signWebhook, verifyWebhook } from './transport/http/standard-webhooks';
export type {
  SignWebhookInput,
  VerifyWebhookInput,
  WebhookVerification,
  WebhookRejection,
  WebhookSecrets,
  WebhookBody,
  WebhookHeaders,
} from './transport/http/standard-webhooks';
export { StandardWebhooksGuard, VERIFIED_WEBHOOK } from './webhooks/standard-webhooks.guard';
export type { StandardWebhooksGuardOptions, VerifiedWebhook } from './webhooks/standard-webhooks.guard';
export { Retention } from './maintenance/retention';
export { OUTBOX_EVENTS } from './observability/outbox-events';
export type {
  AbandonedEvent,
  OutboxEventScope,
  ClaimLostEvent,
  DuplicateEvent,
  HandledEvent,
  ManualRequiredEvent,
  OutboxEventMap,
  OutboxEventName,
  PublishedEvent,
  ReceivedEvent,
  RetryScheduledEvent,
  SentEvent,
} from './observability/outbox-events';
export { outboxMessageEntity } from './entities/outbox-message.entity';
export { inboxMessageEntity } from './entities/inbox-message.entity';
export { OUTBOX_ENTITIES, outboxEntities } from './entities/outbox-entities';
export type { OutboxEntityTables } from './entities/outbox-entities';
export { fitReadModels } from './entities/fit-read-models';
export type { InboxMessageRecord, MessageRecord, OutboxMessageRecord } from './entities/message-records';
export * from './errors';
export type {
  BatchOptions,
  InboxMessageFilter,
  ListedInboxMessage,
  ListedOutboxMessage,
  MessageFilterFields,
  MessagePage,
  MessagePageOptions,
  OutboxMessageFilter,
} from './admin/message-filter';
