import { changeCommand } from './change-command';

// The commands that change the state of the messages a filter selects, as OutboxAdmin's bulk changes do.

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

/** `nestjs-outbox abandon`: `OutboxAdmin.abandonMessages` (or `abandonInboxMessages`) without the wake-up. */
export const abandonCommand = changeCommand('abandon', {
  change: 'abandon',
  summary: 'give up on PENDING, FAILED and MANUAL_REQUIRED messages',
  description: `Abandons the PENDING, FAILED and MANUAL_REQUIRED messages the filter selects, as
OutboxAdmin.abandonMessages does: they become ABANDONED and are never sent (inbox deliveries with
--inbox: never processed); the later messages of their ordering keys go on.`,
  examples: [
    'nestjs-outbox abandon -d dist/data-source.js --type invoice.draft',
    'nestjs-outbox abandon -d dist/data-source.js --inbox --consumer Legacy.handle --status MANUAL_REQUIRED',
  ],
  operations: { outbox: 'abandonMessages', inbox: 'abandonInboxMessages' },
  done: 'Abandoned',
});

/** `nestjs-outbox purge`: `OutboxAdmin.purgeMessages` (or `purgeInboxMessages`) without the wake-up. */
export const purgeCommand = changeCommand('purge', {
  change: 'purge',
  summary: 'delete DONE and ABANDONED messages (MANUAL_REQUIRED only when --status names it)',
  description: `Deletes the DONE and ABANDONED messages the filter selects, and MANUAL_REQUIRED ones only when
--status names MANUAL_REQUIRED, as OutboxAdmin.purgeMessages does; never a message still to be
sent or processed. It needs --status or a time bound (--created-before, --created-after) besides
the other options. A purged outbox message lets its (type, biz key) be published again; a purged
inbox delivery (--inbox) no longer dedupes: a redelivery runs its handler again.`,
  examples: [
    'nestjs-outbox purge -d dist/data-source.js --status MANUAL_REQUIRED --type legacy.event',
    'nestjs-outbox purge -d dist/data-source.js --inbox --consumer Billing.handle --created-before 2024-03-01',
  ],
  operations: { outbox: 'purgeMessages', inbox: 'purgeInboxMessages' },
  done: 'Purged',
});

/** `nestjs-outbox replay`: `OutboxAdmin.replayMessages` without the wake-up. */
export const replayCommand = changeCommand('replay', {
  change: 'replay',
  summary: 'send DONE outbox messages again, under their own message ids',
  description: `Replays the DONE outbox messages the filter selects, as OutboxAdmin.replayMessages does: each
becomes PENDING, due now, with no attempts, and keeps its message id, so a consumer that dedupes
by message id takes it as new only once its record of the first delivery is gone. A message with
an ordering key stays DONE while a later message of its key is still to be sent: replay it once
those are sent (docs/operations.md, "Replaying sent messages").`,
  examples: [
    'nestjs-outbox replay -d dist/data-source.js --transport partners --created-after 2024-03-01T00:00:00Z',
    'nestjs-outbox replay -d dist/data-source.js --type order.shipped --biz-key order-42:shipped',
  ],
  operations: { outbox: 'replayMessages' },
  done: 'Replayed',
});
