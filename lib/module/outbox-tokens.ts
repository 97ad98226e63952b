import { OutboxAdmin } from '../admin/outbox-admin.service';
import { InboxWorker } from '../inbox/inbox.worker';
import { Retention } from '../maintenance/retention';
import { StuckDetector } from '../maintenance/stuck-detector';
import { INBOX_SUBSCRIPTIONS, OUTBOX_TRANSPORT, OUTBOX_TRANSPORTS } from '../naming/injection-tokens';
import { OutboxDispatcher } from '../outbox/outbox.dispatcher';
import { OutboxService } from '../outbox/outbox.service';
import { outboxToken, type OutboxToken } from '../naming/outbox-name';

/** Token of the outbox `name`'s `OutboxService` (the class itself for the default outbox). */
export function getOutboxServiceToken(name?: string): OutboxToken<OutboxService> {
  return outboxToken(OutboxService, 'OutboxService', name);
}

/** Token of the outbox `name`'s `OutboxAdmin` (the class itself for the default outbox). */
export function getOutboxAdminToken(name?: string): OutboxToken<OutboxAdmin> {
  return outboxToken(OutboxAdmin, 'OutboxAdmin', name);
}

/** Token of the outbox `name`'s `OutboxDispatcher` (the class itself for the default outbox). */
export function getOutboxDispatcherToken(name?: string): OutboxToken<OutboxDispatcher> {
  return outboxToken(OutboxDispatcher, 'OutboxDispatcher', name);
}

/** Token of the outbox `name`'s `InboxWorker`, the deferred inbox worker (the class itself for the default outbox). */
export function getInboxWorkerToken(name?: string): OutboxToken<InboxWorker> {
  return outboxToken(InboxWorker, 'InboxWorker', name);
}

/** Token of the outbox `name`'s `StuckDetector` (the class itself for the default outbox). */
export function getStuckDetectorToken(name?: string): OutboxToken<StuckDetector> {
  return outboxToken(StuckDetector, 'StuckDetector', name);
}

/** Token of the outbox `name`'s `Retention` (the class itself for the default outbox). */
export function getRetentionToken(name?: string): OutboxToken<Retention> {
  return outboxToken(Retention, 'Retention', name);
}

/** Token of the outbox `name`'s default `OutboxTransport` (`OUTBOX_TRANSPORT` for the default outbox). */
export function getOutboxTransportToken(name?: string): OutboxToken<unknown> {
  return outboxToken(OUTBOX_TRANSPORT, 'OUTBOX_TRANSPORT', name);
}

/** Token of the outbox `name`'s `OutboxTransports`, every transport by name (`OUTBOX_TRANSPORTS` for the default outbox). */
export function getOutboxTransportsToken(name?: string): OutboxToken<unknown> {
  return outboxToken(OUTBOX_TRANSPORTS, 'OUTBOX_TRANSPORTS', name);
}

/** Token of the outbox `name`'s `InboxSubscriptions` (`INBOX_SUBSCRIPTIONS` for the default outbox). */
export function getInboxSubscriptionsToken(name?: string): OutboxToken<unknown> {
  return outboxToken(INBOX_SUBSCRIPTIONS, 'INBOX_SUBSCRIPTIONS', name);
}
