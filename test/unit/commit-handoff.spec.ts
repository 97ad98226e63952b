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

  describe('a COMMIT that failed', () => {
    /** A handoff whose lane records what it is handed, and a transaction that recorded one message. */
    function transactionWithOneMessage() {
      const options = { sendOnCommit: true, stuckReclaimAfterMs: 300_000, sendTimeoutMs: 10_000 } as OutboxModuleOptions;
      const handoff = new CommitHandoff({ subscribers: [] } as unknown as DataSource, options, 'instance-1');
      const handedOff: { ids: string[]; confirmFirst: boolean | undefined }[] = [];
      const lane: HandoffLane = {
        handoffToken: () => 'lane-token',
        handOff: (messages, confirmFirst) => handedOff.push({ ids: messages.map((m) => m.id), confirmFirst }),
      };
      handoff.register('default', lane);
      const queryRunner = { transactionDepth: 1, isTransactionActive: true };
      const tx = { queryRunner } as unknown as EntityManager;
      const message = { ...row, messageId: 'm-1', type: 't', exchange: 'x', routingKey: 'r', payload: '{}', headers: '{}', destination: '', maxAttempts: 10 };
      const claim = handoff.claimFor(tx, message)!;
      handoff.record(tx, message, claim, { id: '7', createdAt: new Date() });
      const event = { queryRunner } as never;
      return { handoff, handedOff, queryRunner, event };
    }

    it('hands its messages over through the table, which tells whether they committed (a reply lost in a failover)', () => {
      const { handoff, handedOff, event } = transactionWithOneMessage();
      handoff.beforeTransactionCommit(event);
      handoff.afterQuery({ ...(event as object), query: 'COMMIT', success: false, error: new Error('Connection terminated unexpectedly') } as never);
      expect(handedOff).toEqual([{ ids: ['7'], confirmFirst: true }]);
    });

    it('leaves a commit that succeeded to be handed over from memory', () => {
      const { handoff, handedOff, queryRunner, event } = transactionWithOneMessage();
      handoff.beforeTransactionCommit(event);
      handoff.afterQuery({ ...(event as object), query: 'COMMIT', success: true, rawResults: { command: 'COMMIT' } } as never);
      queryRunner.isTransactionActive = false;
      handoff.afterTransactionCommit(event);
      expect(handedOff).toEqual([{ ids: ['7'], confirmFirst: false }]);
    });
  });
});
