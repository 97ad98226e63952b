import { DataSource, EntitySubscriberInterface, TransactionCommitEvent, TransactionRollbackEvent, TransactionStartEvent } from 'typeorm';

/** The event of a subscriber's `afterQuery`, taken from the interface: TypeORM 0.3's `AfterQueryEvent` takes a type argument, 1.x's none. */
export type AfterQueryEvent = Parameters<NonNullable<EntitySubscriberInterface['afterQuery']>>[0];

/** The transaction events a part of the library follows: a TypeORM subscriber's, each answered synchronously. */
export interface TransactionListener {
  afterQuery?(event: AfterQueryEvent): void;
  beforeTransactionStart?(event: TransactionStartEvent): void;
  afterTransactionStart?(event: TransactionStartEvent): void;
  beforeTransactionCommit?(event: TransactionCommitEvent): void;
  afterTransactionCommit?(event: TransactionCommitEvent): void;
  beforeTransactionRollback?(event: TransactionRollbackEvent): void;
  afterTransactionRollback?(event: TransactionRollbackEvent): void;
}

/**
 * The parts that follow a DataSource's transactions, in the order every event reaches them
 * (with several outboxes on one DataSource, each role's parts in the order they started):
 * - the commit hand-off first, so that a lane woken by a commit already holds its messages;
 * - the server-rollback watch, whose state is its own;
 * - the wake-up, which wakes the lanes of what the transaction published;
 * - the SQLite connection last: the work it retries when a transaction ends runs outside the
 *   application's transactions, once every part has seen this one end.
 */
export const TRANSACTION_LISTENER_ORDER = ['commit-handoff', 'server-rollback-watch', 'outbox-wakeup', 'sqlite-connection'] as const;

export type TransactionListenerRole = (typeof TRANSACTION_LISTENER_ORDER)[number];

interface Listening {
  order: number;
  listener: TransactionListener;
}

const subscribers = new WeakMap<DataSource, TransactionSubscriber>();

/** The one transaction subscriber of `dataSource`, shared by every part and every outbox on it. */
export function transactionSubscriberOf(dataSource: DataSource): TransactionSubscriber {
  let subscriber = subscribers.get(dataSource);
  if (!subscriber) subscribers.set(dataSource, (subscriber = new TransactionSubscriber(dataSource)));
  return subscriber;
}

/**
 * The library's one TypeORM subscriber on a DataSource: it hears the transactions of every query
 * runner and passes each event on to the parts that follow them, in `TRANSACTION_LISTENER_ORDER`.
 * A part starts and stops listening when its own lifecycle says (a stopped dispatcher must still
 * give back what a transaction commits meanwhile), so no part depends on when Nest shuts another
 * down. A part that throws stops the event there, as a throwing subscriber stops TypeORM's
 * broadcast.
 */
export class TransactionSubscriber implements EntitySubscriberInterface {
  /** Replaced, never changed in place: a part may stop listening while an event is passed on. */
  private listeners: readonly Listening[] = [];

  constructor(private readonly dataSource: DataSource) {}

  /**
   * Passes the DataSource's transaction events to `listener` as the part `role`; returns a function
   * that stops it. Listening again is harmless, and registers this subscriber again where
   * initializing the DataSource anew replaced its subscribers.
   */
  listen(role: TransactionListenerRole, listener: TransactionListener): () => void {
    if (!this.listeners.some((l) => l.listener === listener)) {
      const order = TRANSACTION_LISTENER_ORDER.indexOf(role);
      const after = this.listeners.filter((l) => l.order > order);
      this.listeners = [...this.listeners.filter((l) => l.order <= order), { order, listener }, ...after];
    }
    if (!this.dataSource.subscribers.includes(this)) this.dataSource.subscribers.push(this);
    return () => this.stop(listener);
  }

  afterQuery(event: AfterQueryEvent): void {
    for (const { listener } of this.listeners) listener.afterQuery?.(event);
  }

  beforeTransactionStart(event: TransactionStartEvent): void {
    for (const { listener } of this.listeners) listener.beforeTransactionStart?.(event);
  }

  afterTransactionStart(event: TransactionStartEvent): void {
    for (const { listener } of this.listeners) listener.afterTransactionStart?.(event);
  }

  beforeTransactionCommit(event: TransactionCommitEvent): void {
    for (const { listener } of this.listeners) listener.beforeTransactionCommit?.(event);
  }

  afterTransactionCommit(event: TransactionCommitEvent): void {
    for (const { listener } of this.listeners) listener.afterTransactionCommit?.(event);
  }

  beforeTransactionRollback(event: TransactionRollbackEvent): void {
    for (const { listener } of this.listeners) listener.beforeTransactionRollback?.(event);
  }

  afterTransactionRollback(event: TransactionRollbackEvent): void {
    for (const { listener } of this.listeners) listener.afterTransactionRollback?.(event);
  }

  private stop(listener: TransactionListener): void {
    this.listeners = this.listeners.filter((l) => l.listener !== listener);
    if (this.listeners.length > 0) return;
    const index = this.dataSource.subscribers.indexOf(this);
    if (index >= 0) this.dataSource.subscribers.splice(index, 1);
  }
}
