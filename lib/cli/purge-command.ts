import { changeCommand } from './change-command';

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
