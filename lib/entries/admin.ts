/**
 * `nestjs-outbox/admin`: what operators read and do. The admin service and its filters, pages and
 * figures; the services that run each outbox (dispatcher, inbox worker, stuck detector, retention)
 * and their tokens, for their figures and for one run now.
 *
 * @module nestjs-outbox/admin
 */

// The admin service: find, list, count, requeue, abandon, replay and purge messages; stats.
export { OutboxAdmin } from '../admin/outbox-admin.service';
export { InjectOutboxAdmin } from '../module/inject-outbox.decorator';
export { OutboxAdminFilterError } from '../errors';
export type {
  BatchOptions,
  InboxMessageFilter,
  ListedInboxMessage,
  ListedOutboxMessage,
  MessageFilterFields,
  MessagePage,
  MessagePageOptions,
  OutboxMessageFilter,
} from '../admin/message-filter';
export type { InboxStats, OutboxActivity, OutboxStats, OutboxTableStats, TableStats } from '../admin/outbox-stats';
export type { MessageChange } from '../engine/state-table';
export type { MessageDetail, OutboxMessageQuery, OutboxMessageState, ParkedKey, RecentActivity } from '../engine/message-views';

// The services each outbox runs, with the figures they keep.
export { OutboxDispatcher } from '../outbox/outbox.dispatcher';
export type { DispatcherStats } from '../outbox/outbox.dispatcher';
export { InboxWorker } from '../inbox/inbox.worker';
export { StuckDetector } from '../maintenance/stuck-detector';
export type { StuckCheckReport } from '../maintenance/stuck-detector';
export { Retention } from '../maintenance/retention';

// Their tokens for a named outbox (the class itself for the default one).
export { getInboxWorkerToken, getOutboxAdminToken, getOutboxDispatcherToken, getRetentionToken, getStuckDetectorToken } from '../module/outbox-tokens';
