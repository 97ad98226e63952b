import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager, TransactionCommitEvent, TransactionRollbackEvent } from 'typeorm';
import { OutboxDialect } from '../dialects/outbox-dialect';
import { TransactionListener, transactionSubscriberOf } from '../dialects/transaction-subscriber';
import { TransactionSlot } from '../dialects/transaction-slot';
import { OUTBOX_DATA_SOURCE, OUTBOX_DIALECT, OUTBOX_OPTIONS, OUTBOX_WORKER_DATA_SOURCE } from '../naming/injection-tokens';
import { OutboxModuleOptions } from '../options/outbox-module-options';

const RELISTEN_DELAY_MS = 1_000;

/** What a publishing transaction records: for which transports it wrote rows, and whether it notified. */
interface Published {
  transports: Set<string>;
  notified: boolean;
}

/**
 * Called on every wake-up with the transports whose rows are waiting, when they are known (a
 * commit in this process); without them (another instance's signal, a requeue), any may be.
 */
export type WakeupListener = (transports?: ReadonlySet<string>) => void;

/**
 * Tells dispatchers that rows are waiting, as cheaply as the write path allows:
 * in-process right after the publishing transaction commits (it follows the DataSource's transactions),
 * and to other instances by a database signal sent at most once per `notifyMinIntervalMs` per
 * process, because notifying commits are serialised by PostgreSQL; MySQL and MariaDB, which have
 * no NOTIFY, look for other instances' rows every `wakeupProbeIntervalMs` instead, at no cost to
 * the write path. Polling stays the backstop.
 */
@Injectable()
export class OutboxWakeup implements TransactionListener, BeforeApplicationShutdown {
  private readonly logger = new Logger(OutboxWakeup.name);
  private readonly listeners = new Set<WakeupListener>();
  /** What each query runner's open transaction published. */
  private readonly transactions = new TransactionSlot<Published>();
  private readonly stopFollowingTransactions: () => void;
  private lastNotifyAt = 0;
  private stopListening?: () => Promise<void>;
  private relistenTimer?: NodeJS.Timeout;
  private listening?: Promise<void>;
  private closed = false;

  constructor(
    @Inject(OUTBOX_DATA_SOURCE) dataSource: DataSource,
    /** LISTEN holds a connection for the life of the process (and the MySQL look takes one at a time): the worker pool's, where it has one. */
    @Inject(OUTBOX_WORKER_DATA_SOURCE) private readonly listenDataSource: DataSource,
    @Inject(OUTBOX_DIALECT) private readonly dialect: OutboxDialect,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
  ) {
    this.stopFollowingTransactions = transactionSubscriberOf(dataSource).listen('outbox-wakeup', this);
  }

  /** Calls `listener` on every wake-up; returns a function that unsubscribes it. */
  subscribe(listener: WakeupListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Wakes local listeners now, for the rows of `transports` (default: of any transport). */
  wake(transports?: ReadonlySet<string>): void {
    for (const listener of this.listeners) listener(transports);
  }

  /**
   * Records, inside the publishing transaction, that it wrote rows for `transport`, so that its
   * commit wakes that transport's lane (and no other); may send the cross-instance signal.
   */
  async published(manager: EntityManager, transport: string): Promise<void> {
    const published = this.transactions.getOrCreate(manager.queryRunner!, () => ({ transports: new Set(), notified: false }));
    published.transports.add(transport);
    if (!this.options.notifyEnabled || !this.dialect.notifyPublished || published.notified) return;
    const now = Date.now();
    if (now - this.lastNotifyAt < this.options.notifyMinIntervalMs) return;
    this.lastNotifyAt = now;
    published.notified = true;
    await this.dialect.notifyPublished(manager, this.options.notifyChannel);
  }

  /** Starts receiving other instances' signals (where the database has them). */
  async startListening(): Promise<void> {
    if (!this.options.notifyEnabled || !this.dialect.listen || this.closed) return;
    // One listener at a time: a second would hold a connection nobody stops.
    if (this.listening || this.stopListening) return this.listening;
    // Shutdown waits for a listen in progress: the connection it takes must be back in its pool
    // before the pool closes, or closing the pool waits for it for ever.
    this.listening = this.listen(this.dialect.listen.bind(this.dialect)).finally(() => (this.listening = undefined));
    await this.listening;
  }

  private async listen(listen: NonNullable<OutboxDialect['listen']>): Promise<void> {
    try {
      const stop = await listen(
        this.listenDataSource,
        { channel: this.options.notifyChannel, probeIntervalMs: this.options.wakeupProbeIntervalMs },
        () => this.wake(),
        (error) => this.listenLost(error),
      );
      if (this.closed) return await stop();
      this.stopListening = stop;
      // Signals sent while nobody listened are lost: look once now.
      this.wake();
    } catch (error) {
      this.listenLost(error as Error);
    }
  }

  afterTransactionCommit(event: TransactionCommitEvent): void {
    // A released savepoint also fires this; only the outermost commit makes rows visible.
    if (event.queryRunner.isTransactionActive) return;
    const published = this.transactions.take(event.queryRunner);
    if (published) this.wake(published.transports);
  }

  afterTransactionRollback(event: TransactionRollbackEvent): void {
    if (event.queryRunner.isTransactionActive) return;
    // The signal was rolled back with the transaction: let the next publisher send one.
    if (this.transactions.take(event.queryRunner)?.notified) this.lastNotifyAt = 0;
  }

  /** Before TypeORM closes its pool, so the listening connection is given back, not broken. */
  async beforeApplicationShutdown(): Promise<void> {
    this.closed = true;
    clearTimeout(this.relistenTimer);
    await this.listening;
    this.stopFollowingTransactions();
    await this.stopListening?.();
  }

  private listenLost(error: Error): void {
    this.stopListening = undefined;
    // One loss is often reported twice (the connection's error, then its LISTEN failing): one retry.
    if (this.closed || this.relistenTimer) return;
    this.logger.warn(`Lost the wake-up listener (${error.message}); polling continues, retrying in ${RELISTEN_DELAY_MS} ms`);
    this.relistenTimer = setTimeout(() => {
      this.relistenTimer = undefined;
      void this.startListening();
    }, RELISTEN_DELAY_MS);
    this.relistenTimer.unref();
  }
}
