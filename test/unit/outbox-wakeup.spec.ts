import { DataSource, EntityManager } from 'typeorm';
import { OutboxDialect } from '../../lib/dialects/outbox-dialect';
import { OutboxModuleOptions } from '../../lib/options/outbox-module-options';
import { OutboxWakeup } from '../../lib/outbox/outbox-wakeup';

/** A dialect whose LISTEN answers when the test says, as a connection taken from a busy pool does. */
function slowListeningDialect() {
  let answer!: () => void;
  const stopped = jest.fn(async () => undefined);
  const dialect = {
    listen: () =>
      new Promise<() => Promise<void>>((resolve) => {
        answer = () => resolve(stopped);
      }),
  } as unknown as OutboxDialect;
  return { dialect, stopped, answer: () => answer() };
}

function wakeupOn(dialect: OutboxDialect): OutboxWakeup {
  const dataSource = { subscribers: [] } as unknown as DataSource;
  const options = Object.assign(new OutboxModuleOptions(), { notifyEnabled: true });
  return new OutboxWakeup(dataSource, dataSource, dialect, options);
}

describe('OutboxWakeup shutdown', () => {
  it('gives back a listening connection that arrives after shutdown began', async () => {
    const { dialect, stopped, answer } = slowListeningDialect();
    const wakeup = wakeupOn(dialect);
    const listening = wakeup.startListening();

    let shutDown = false;
    const shutdown = wakeup.beforeApplicationShutdown().then(() => (shutDown = true));
    await new Promise((resolve) => setImmediate(resolve));
    // The pool cannot close while the listen holds a connection: shutdown waits for it.
    expect(shutDown).toBe(false);

    answer();
    await Promise.all([listening, shutdown]);
    expect(stopped).toHaveBeenCalledTimes(1);
  });

  it('does not wake anyone for a listen that completes after shutdown', async () => {
    const { dialect, answer } = slowListeningDialect();
    const wakeup = wakeupOn(dialect);
    const woken = jest.fn();
    wakeup.subscribe(woken);
    const listening = wakeup.startListening();
    const shutdown = wakeup.beforeApplicationShutdown();
    answer();
    await Promise.all([listening, shutdown]);
    expect(woken).not.toHaveBeenCalled();
  });

  it('retries once for a loss reported twice, and leaves no listener behind at shutdown', async () => {
    jest.useFakeTimers();
    try {
      let calls = 0;
      let listening = 0;
      const dialect = {
        // The first LISTEN's connection is killed under it: its error, then the query's rejection.
        listen: async (_dataSource: unknown, _channel: string, _onSignal: () => void, onError: (error: Error) => void) => {
          calls++;
          if (calls === 1) {
            onError(new Error('terminating connection due to administrator command'));
            throw new Error('Connection terminated unexpectedly');
          }
          listening++;
          return async () => void listening--;
        },
      } as unknown as OutboxDialect;
      const wakeup = wakeupOn(dialect);
      await wakeup.startListening();
      await jest.advanceTimersByTimeAsync(5_000);
      expect({ calls, listening }).toEqual({ calls: 2, listening: 1 });

      await wakeup.beforeApplicationShutdown();
      expect(listening).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('OutboxWakeup on commit', () => {
  it("wakes the lane of a message published while TypeORM lends the runner the caller's data (save(…, { data }))", async () => {
    const wakeup = wakeupOn({} as OutboxDialect);
    const woken = jest.fn();
    wakeup.subscribe(woken);
    const runner = { data: {}, isTransactionActive: true };
    const ownData = runner.data;
    // An entity subscriber publishes during the save, while `data` is the caller's object.
    runner.data = { publish: true };
    await wakeup.published({ queryRunner: runner } as unknown as EntityManager, 'default');
    runner.data = ownData;
    runner.isTransactionActive = false;
    wakeup.afterTransactionCommit({ queryRunner: runner } as never);
    expect(woken).toHaveBeenCalledWith(new Set(['default']));
  });

  it('wakes nobody for a transaction that rolled back', async () => {
    const wakeup = wakeupOn({} as OutboxDialect);
    const woken = jest.fn();
    wakeup.subscribe(woken);
    const runner = { data: {}, isTransactionActive: true };
    await wakeup.published({ queryRunner: runner } as unknown as EntityManager, 'default');
    runner.isTransactionActive = false;
    wakeup.afterTransactionRollback({ queryRunner: runner } as never);
    wakeup.afterTransactionCommit({ queryRunner: runner } as never);
    expect(woken).not.toHaveBeenCalled();
  });
});
