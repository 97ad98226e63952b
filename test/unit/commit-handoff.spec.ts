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
  it('takes messages with the default lease and send timeout', () => {
    expect(handoffWith(30_000, 10_000).claimFor(manager, row)).toMatchObject({ token: 'lane-token', claimedBy: 'instance-1' });
  });

  it('takes messages however long a send may take within the lease: their lease is renewed while they are sent', () => {
    expect(handoffWith(11_000, 10_000).claimFor(manager, row)).toMatchObject({ token: 'lane-token', claimedBy: 'instance-1' });
  });
});
