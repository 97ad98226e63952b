import type { Type } from '@nestjs/common';
import { OutboxAdmin } from '../admin/outbox-admin.service';
import { InboxService } from '../inbox/inbox.service';
import { InboxWorker } from '../inbox/inbox.worker';
import { Retention } from '../maintenance/retention';
import { StuckDetector } from '../maintenance/stuck-detector';
import { INBOX_SUBSCRIPTIONS, OUTBOX_TRANSPORT, OUTBOX_TRANSPORTS } from '../outbox.constants';
import { OutboxDispatcher } from '../outbox/outbox.dispatcher';
import { OutboxService } from '../outbox/outbox.service';
import { WebhookIntake } from '../webhooks/webhook-intake.service';
import { namedOutbox } from './outbox-name';

/** An injection token of an outbox's service: its class (or symbol) for the default outbox, a string of its own for a named one. */
export type OutboxToken<T> = Type<T> | symbol | string;

/** The token of what `defaultToken` is in the outbox `name`, as `getDataSourceToken(name)` is in `@nestjs/typeorm`. */
function outboxToken<T>(defaultToken: Type<T> | symbol, kind: string, name: string | undefined): OutboxToken<T> {
  const named = namedOutbox(name);
  return named === undefined ? defaultToken : `nestjs-outbox:${named}:${kind}`;
}

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

/** Token of the outbox `name`'s `InboxService` (the class itself for the default outbox). */
export function getInboxServiceToken(name?: string): OutboxToken<InboxService> {
  return outboxToken(InboxService, 'InboxService', name);
}

/** Token of the outbox `name`'s `InboxWorker`, the deferred inbox worker (the class itself for the default outbox). */
export function getInboxWorkerToken(name?: string): OutboxToken<InboxWorker> {
  return outboxToken(InboxWorker, 'InboxWorker', name);
}

/** Token of the outbox `name`'s `WebhookIntake` (the class itself for the default outbox). */
export function getWebhookIntakeToken(name?: string): OutboxToken<WebhookIntake> {
  return outboxToken(WebhookIntake, 'WebhookIntake', name);
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
