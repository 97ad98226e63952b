import { changeCommand } from './change-command';

/** `nestjs-outbox requeue`: `OutboxAdmin.requeueMessages` (or `requeueInboxMessages`) without the wake-up. */
export const requeueCommand = changeCommand('requeue', {
  change: 'requeue',
  summary: 'send FAILED and MANUAL_REQUIRED messages again, with a fresh attempt budget',
  description: `Requeues the FAILED and MANUAL_REQUIRED messages the filter selects, as
OutboxAdmin.requeueMessages does: outbox messages become PENDING, due now, with no attempts;
inbox deliveries (--inbox) become FAILED, due now, with no attempts, for the deferred inbox worker
or a redelivery to take. A --status naming neither status is refused.`,
  examples: [
    'nestjs-outbox requeue -d dist/data-source.js --transport partners --error-contains "HTTP 410" --created-after 2024-03-01',
    'nestjs-outbox requeue -d dist/data-source.js --inbox --consumer Billing.handle --status MANUAL_REQUIRED',
  ],
  operations: { outbox: 'requeueMessages', inbox: 'requeueInboxMessages' },
  done: 'Requeued',
});
