import type { Provider, Type } from '@nestjs/common';
import { OutboxAdmin } from '../admin/outbox-admin.service';
import { getInboxServiceToken, InboxService } from '../inbox/inbox.service';
import { InboxWorker } from '../inbox/inbox.worker';
import { Retention } from '../maintenance/retention';
import { StuckDetector } from '../maintenance/stuck-detector';
import { INBOX_SUBSCRIPTIONS, OUTBOX_ADMIN, OUTBOX_TRANSPORT, OUTBOX_TRANSPORTS } from '../naming/injection-tokens';
import type { OutboxToken } from '../naming/outbox-name';
import { OutboxDispatcher } from '../outbox/outbox.dispatcher';
import { OutboxService } from '../outbox/outbox.service';
import { getWebhookIntakeToken, WebhookIntake } from '../webhooks/webhook-intake.service';
import {
  getInboxSubscriptionsToken,
  getInboxWorkerToken,
  getOutboxAdminToken,
  getOutboxDispatcherToken,
  getOutboxServiceToken,
  getOutboxTransportsToken,
  getOutboxTransportToken,
  getRetentionToken,
  getStuckDetectorToken,
} from './outbox-tokens';

/** The services users inject, each with the function giving its token in a named outbox. */
const SERVICES: [service: Type, tokenOf: (name: string) => OutboxToken<unknown>][] = [
  [OutboxService, getOutboxServiceToken],
  [OutboxDispatcher, getOutboxDispatcherToken],
  [InboxService, getInboxServiceToken],
  [InboxWorker, getInboxWorkerToken],
  [WebhookIntake, getWebhookIntakeToken],
  [StuckDetector, getStuckDetectorToken],
  [Retention, getRetentionToken],
  [OutboxAdmin, getOutboxAdminToken],
];

/** Values the module provides under symbols, which users inject too. */
const VALUES: [symbol, (name: string) => OutboxToken<unknown>][] = [
  [OUTBOX_TRANSPORTS, getOutboxTransportsToken],
  [INBOX_SUBSCRIPTIONS, getInboxSubscriptionsToken],
];

/**
 * The services of an outbox that users inject, and what the module exports. The default outbox
 * provides and exports them under their classes and symbols, as always. A named outbox provides
 * its services only under tokens of its name (`getOutboxServiceToken(name)`…), never under their
 * classes, so that neither its exports nor a lookup by class (`app.get(OutboxService)`) can be
 * mistaken for the default outbox's; its symbols stay inside it, exported under its name's tokens.
 */
export function publicProviders(name: string | undefined): { providers: Provider[]; exports: OutboxToken<unknown>[] } {
  const admin: Provider = { provide: OUTBOX_ADMIN, useExisting: name === undefined ? OutboxAdmin : getOutboxAdminToken(name) };
  if (name === undefined) {
    return {
      providers: [...SERVICES.map(([service]) => service), admin],
      exports: [...SERVICES.map(([service]) => service), ...VALUES.map(([token]) => token), OUTBOX_TRANSPORT],
    };
  }
  const services = SERVICES.map(([service, tokenOf]) => ({ provide: tokenOf(name), useClass: service }));
  const values = VALUES.map(([token, tokenOf]) => ({ provide: tokenOf(name), useExisting: token }));
  // The default transport is provided under its public token by the module's transport providers.
  return {
    providers: [...services, ...values, admin],
    exports: [...[...services, ...values].map((provider) => provider.provide), getOutboxTransportToken(name)],
  };
}
