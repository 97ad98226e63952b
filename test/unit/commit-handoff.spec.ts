import { DataSource, EntityManager } from 'typeorm';
import { NewOutboxRow } from '../../lib/message/validate-message';
import { OutboxModuleOptions } from '../../lib/options/outbox-module-options';
import { CommitHandoff, HandoffLane } from '../../lib/outbox/commit-handoff';

/** An unordered, undelayed message of the default transport: what a hand-off takes. */
const row = { orderingKey: null, delayMs: 0, availableAt: null, transport: 'default' } as NewOutboxRow;
/** A transaction's manager, as TypeORM keeps its depth. */
const manager = { queryRunner: { transactionDepth: 1 } } as unknown as EntityManager;

function handoffWith(stuckReclaimAfterMs: number, sendTimeoutMs: number): CommitHandoff {
  const options = { sendOnCommit: true, stuckReclaimAfterMs, sendTimeoutMs } as OutboxModuleOptions;
  const handoff = new CommitHandoff({ subscribers: [] } as unknown as DataSource, options, 'instance-1');
  const lane: HandoffLane = { handoffToken: () => 'lane-token', handOff: () => undefined };
  handoff.register('default', lane);
  return handoff;
}

describe('CommitHandoff', () => {
  it('takes messages where the lease leaves room for four sends', () => {
    expect(handoffWith(40_000, 10_000).claimFor(manager, row)).toMatchObject({ token: 'lane-token', claimedBy: 'instance-1' });
  });

  it('leaves every message to the claims where a wait, a send and a renewal would not fit in the lease', () => {
    // Valid options (the lease exceeds the send timeout), but a handed-off message could be
    // reclaimed while it waits for a loop and is sent.
    expect(handoffWith(39_999, 10_000).claimFor(manager, row)).toBeUndefined();
  });
});
