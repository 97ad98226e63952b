import { changeCommand } from './change-command';

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
