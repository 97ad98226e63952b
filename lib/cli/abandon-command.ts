import { changeCommand } from './change-command';

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
