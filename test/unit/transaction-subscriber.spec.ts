import { DataSource } from 'typeorm';
import { TransactionListener, transactionSubscriberOf } from '../../lib/dialects/transaction-subscriber';

/** A DataSource as the subscriber sees it: its list of subscribers. */
const dataSourceStub = () => ({ subscribers: [] as unknown[] }) as unknown as DataSource;

/** A listener that writes its name into `heard` on every commit. */
const listener = (name: string, heard: string[]): TransactionListener => ({ afterTransactionCommit: () => void heard.push(name) });

const commit = { queryRunner: {} } as never;

describe('TransactionSubscriber', () => {
  it('is registered once on its DataSource, however many parts listen', () => {
    const dataSource = dataSourceStub();
    const subscriber = transactionSubscriberOf(dataSource);
    subscriber.listen('commit-handoff', {});
    subscriber.listen('outbox-wakeup', {});
    expect(transactionSubscriberOf(dataSource)).toBe(subscriber);
    expect(dataSource.subscribers).toEqual([subscriber]);
  });

  it('passes each event to the parts in their fixed order, whatever order they started in', () => {
    const heard: string[] = [];
    const subscriber = transactionSubscriberOf(dataSourceStub());
    subscriber.listen('sqlite-connection', listener('sqlite', heard));
    subscriber.listen('outbox-wakeup', listener('wakeup', heard));
    subscriber.listen('server-rollback-watch', listener('watch', heard));
    subscriber.listen('commit-handoff', listener('handoff', heard));
    subscriber.listen('commit-handoff', listener('second outbox handoff', heard));
    subscriber.afterTransactionCommit(commit);
    expect(heard).toEqual(['handoff', 'second outbox handoff', 'watch', 'wakeup', 'sqlite']);
  });

  it('stops passing events to a part that stopped, and leaves the DataSource with the last one', () => {
    const heard: string[] = [];
    const dataSource = dataSourceStub();
    const subscriber = transactionSubscriberOf(dataSource);
    const stopHandoff = subscriber.listen('commit-handoff', listener('handoff', heard));
    const stopWakeup = subscriber.listen('outbox-wakeup', listener('wakeup', heard));
    stopWakeup();
    subscriber.afterTransactionCommit(commit);
    expect(heard).toEqual(['handoff']);
    expect(dataSource.subscribers).toEqual([subscriber]);
    stopHandoff();
    expect(dataSource.subscribers).toEqual([]);
  });

  it('passes an event on to every part listening when it came, though one stops meanwhile', () => {
    const heard: string[] = [];
    const subscriber = transactionSubscriberOf(dataSourceStub());
    const stop = subscriber.listen('commit-handoff', { afterTransactionCommit: () => void (heard.push('handoff'), stop()) });
    subscriber.listen('outbox-wakeup', listener('wakeup', heard));
    subscriber.afterTransactionCommit(commit);
    subscriber.afterTransactionCommit(commit);
    expect(heard).toEqual(['handoff', 'wakeup', 'wakeup']);
  });

  it('registers again, on listening, where initializing the DataSource anew replaced its subscribers', () => {
    const dataSource = dataSourceStub();
    const part = {};
    const subscriber = transactionSubscriberOf(dataSource);
    subscriber.listen('sqlite-connection', part);
    dataSource.subscribers.length = 0;
    subscriber.listen('sqlite-connection', part);
    expect(dataSource.subscribers).toEqual([subscriber]);
  });
});
