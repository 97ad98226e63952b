import { TransactionHost } from '@nestjs-cls/transactional';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { ClaimedInboxMessage, InboxDialect } from '../dialects/inbox-dialect';
import { ServerRollbackWatch } from '../dialects/server-rollback-watch';
import { ClaimWorker } from '../engine/claim-worker';
import { persistently } from '../engine/persistently';
import { failedSettlement, failurePolicyFrom, FailurePolicy } from '../engine/settlement';
import { judgedPipeRejection } from './pipe-rejection';
import { MessageStatus } from '../message/message-status';
import { INBOX_DIALECT, OUTBOX_WORKER_DATA_SOURCE, OUTBOX_INSTANCE_ID, OUTBOX_OPTIONS, OUTBOX_STANDBY_GATE } from '../naming/injection-tokens';
import { passStandbyGate, StandbyGate } from '../engine/standby-gate';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { leaseTimings } from '../options/claim-lease';
import { describeError } from '../retry/error-classifier';
import { InboxConsumers } from './inbox-consumers';
import { InboxWakeup } from './inbox-wakeup';
import { errorType, OUTBOX_EVENTS } from '../observability/outbox-events';
import { endSpan, runInSpan, startSpanFrom } from '../observability/outbox-tracing';
import { printable } from '../message/printable';
import { OUTBOX_TRANSACTION_HOST } from '../naming/outbox-transaction-host';
import { OutboxIdentity } from '../naming/outbox-identity';

const POLL_INTERVAL_NAME = 'nestjs-outbox:inbox';

/** The claim was taken over while the handler ran: its effects must not commit. */
class ClaimLostError extends Error {}

/**
 * Runs deferred inbox consumers (`@InboxHandler({ mode: 'deferred' })`, `@WebhookInbox()`): claims
 * stored deliveries with the same claim / settle / backoff / MANUAL_REQUIRED / stuck-reclaim
 * machinery as the outbox, and runs each through its consumer (`DeferredConsumer.runStored`), with
 * the business method in a transaction that also settles its row, fenced by the claim token, so a
 * handler whose claim was reclaimed meanwhile commits nothing.
 */
@Injectable()
export class InboxWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(this.identity.logContext(InboxWorker.name));
  private readonly failurePolicy: FailurePolicy;
  private worker?: ClaimWorker<ClaimedInboxMessage>;

  /**
   * Nest creates it: inject it rather than constructing it.
   * @internal
   */
  constructor(
    @Inject(OUTBOX_WORKER_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(INBOX_DIALECT) private readonly dialect: InboxDialect,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    @Inject(OUTBOX_INSTANCE_ID) private readonly instanceId: string,
    private readonly consumers: InboxConsumers,
    private readonly wakeup: InboxWakeup,
    private readonly identity: OutboxIdentity,
    private readonly serverRollbacks: ServerRollbackWatch,
    @Inject(OUTBOX_STANDBY_GATE) private readonly standbyGate: StandbyGate | null,
    @Optional() @Inject(OUTBOX_TRANSACTION_HOST) private readonly transactionHost?: TransactionHost,
    @Optional() private readonly scheduler?: SchedulerRegistry,
  ) {
    this.failurePolicy = failurePolicyFrom(options);
  }

  /** Nest lifecycle hook: starts the worker and its polling where `dispatcherEnabled` and deferred consumers exist. */
  onApplicationBootstrap(): void {
    const consumers = [...this.consumers.deferred.keys()];
    if (consumers.length === 0 || !this.options.dispatcherEnabled || !this.scheduler) return;
    const worker = new ClaimWorker<ClaimedInboxMessage>({
      dataSource: this.dataSource,
      table: this.dialect,
      batchSize: this.options.inboxBatchSize,
      concurrency: this.options.dispatchConcurrency,
      claim: (limit, claimToken) => this.dialect.claim(this.dataSource, consumers, limit, claimToken, this.instanceId),
      process: (batch) => this.processBatch(batch),
      processTimeoutMs: this.options.stuckReclaimAfterMs,
      ...leaseTimings(this.options),
      logger: this.logger,
    });
    this.worker = worker;
    this.scheduler.addInterval(
      this.identity.scheduleName(POLL_INTERVAL_NAME),
      setInterval(() => worker.trigger(), this.options.pollIntervalMs),
    );
    this.wakeup.subscribe(() => worker.trigger());
    worker.trigger();
  }

  /** Processes until no due delivery is left; resolves with how many were claimed. For tests and manual draining. */
  async drain(): Promise<number> {
    return (await this.worker?.drain()) ?? 0;
  }

  /** Nest lifecycle hook: stops claiming, waits for the handlers in progress and gives back its claims. */
  async beforeApplicationShutdown(): Promise<void> {
    const interval = this.identity.scheduleName(POLL_INTERVAL_NAME);
    if (this.scheduler?.doesExist('interval', interval)) this.scheduler.deleteInterval(interval);
    await this.worker?.stop();
  }

  /**
   * Runs a batch's rows one after another. Each row's lease is renewed while it waits for its
   * turn; a row whose claim was taken over all the same (this process stalled past its lease)
   * is not started: its new claimant runs it, and a handler's effects outside its transaction
   * (a call out, an e-mail) must not happen twice.
   */
  private async processBatch(batch: ClaimedInboxMessage[]): Promise<void> {
    const worker = this.worker!;
    // With awaitStandby, a handler runs only for deliveries a promoted standby would still have.
    const gate = this.standbyGate;
    if (gate && !(await passStandbyGate({ gate, table: this.dialect, dataSource: this.dataSource, logger: this.logger }, batch))) {
      worker.settled(batch);
      return;
    }
    for (const row of batch) {
      if (!(await worker.stillHeld(row))) {
        this.identity.emit(OUTBOX_EVENTS.claimLost, () => ({ table: 'inbox', count: 1 }));
        this.logger.warn(
          `${printable(row.consumer)}: message ${printable(row.messageId)} is no longer claimed by this instance (taken over, or its lease could not be confirmed); not running it: its next claimant will`,
        );
        continue;
      }
      try {
        await this.processTraced(row);
      } finally {
        worker.settled([row]);
      }
    }
  }

  /** The stored delivery in a consumer span continuing the trace its stored headers carry (AMQP headers, a webhook's request headers). */
  private async processTraced(row: ClaimedInboxMessage): Promise<void> {
    const operation = startSpanFrom(row.headers, `process ${row.consumer}`, 'consumer', {
      'messaging.system': this.consumers.deferred.get(row.consumer)?.messagingSystem ?? 'rabbitmq',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.consumer.group.name': row.consumer,
      'messaging.message.id': row.messageId,
    });
    if (!operation) return this.processOne(row);
    try {
      await runInSpan(operation, () => this.processOne(row));
    } finally {
      endSpan(operation);
    }
  }

  private async processOne(row: ClaimedInboxMessage): Promise<void> {
    const consumer = this.consumers.deferred.get(row.consumer)!;
    let outcome: { done: true } | { done: false; error: unknown } | undefined;
    let chainError: unknown;
    const started = performance.now();
    try {
      // The consumer runs its handler's chain (guards, interceptors, pipes) and hands the rest of
      // it to this replay, in a transaction that also settles the row, fenced by the claim token.
      await consumer.runStored(row, async (runRest) => {
        try {
          await this.runAndSettle(row, runRest);
          outcome = { done: true };
        } catch (error) {
          // Settled by the worker, not thrown on through the chain: as in transactional mode,
          // where the inbox answers a failed attempt with a Nack, the interceptors around it see
          // no error.
          outcome = { done: false, error };
        }
      });
    } catch (error) {
      chainError = error;
    }
    if (outcome?.done) {
      this.identity.emit(OUTBOX_EVENTS.handled, () => ({
        consumer: row.consumer,
        messageId: row.messageId,
        type: row.type,
        handlerMs: performance.now() - started,
      }));
      if (chainError !== undefined) {
        this.logger.warn(
          `${printable(row.consumer)}: message ${printable(row.messageId)} was processed, then the handler chain threw: ${describeError(chainError, 300)}`,
        );
      }
      return;
    }
    // What the transaction threw wins: an interceptor around the inbox may have swallowed it.
    const error =
      outcome?.error ??
      chainError ??
      new Error('the handler chain returned without reaching @InboxHandler (a guard or an interceptor before it did not call on)');
    if (error instanceof ClaimLostError) {
      this.identity.emit(OUTBOX_EVENTS.claimLost, () => ({ table: 'inbox', count: 1 }));
      this.logger.warn(`${printable(row.consumer)}: the claim on message ${printable(row.messageId)} was taken over; its effects were rolled back`);
      return;
    }
    const settlement = failedSettlement(row, judgedPipeRejection(error, this.options.retryPipeRejections), this.failurePolicy);
    // Retried: a lost settle would leave the row PROCESSING until the stuck detector reclaims it.
    await persistently(() => this.dialect.settleFailed(this.dataSource, [settlement]));
    const event = {
      table: 'inbox' as const,
      consumer: row.consumer,
      messageId: row.messageId,
      type: row.type,
      error: settlement.error,
      errorType: errorType(error),
    };
    if (settlement.status === MessageStatus.MANUAL_REQUIRED) this.identity.emit(OUTBOX_EVENTS.manualRequired, () => ({ ...event, attempts: row.attempts + 1 }));
    else this.identity.emit(OUTBOX_EVENTS.retryScheduled, () => ({ ...event, attempt: row.attempts + 1, delayMs: settlement.delayMs }));
    const outcomeText = settlement.status === MessageStatus.MANUAL_REQUIRED ? 'gave up (MANUAL_REQUIRED)' : `retrying in ${settlement.delayMs} ms`;
    this.logger.warn(`${printable(row.consumer)} failed on message ${printable(row.messageId)}, ${outcomeText}: ${settlement.error}`);
  }

  /** Runs the rest of the handler's chain and settles the row DONE in one transaction, fenced by the claim token. */
  private async runAndSettle(row: ClaimedInboxMessage, runRest: () => Promise<unknown>): Promise<void> {
    const txHost = this.transactionHost!;
    const transaction = () =>
      txHost.withTransaction(async () => {
        await runRest();
        // The handler may have caught a deadlock: settling now would mark the row DONE in autocommit.
        this.serverRollbacks.assertNotRolledBack(txHost.tx, `${printable(row.consumer)}'s handler transaction`);
        if ((await this.dialect.settleDone(txHost.tx, [row])) === 0) throw new ClaimLostError();
      });
    // On a single-connection database (SQLite), the concurrent loops' transactions would nest.
    await (this.dialect.runTransactionsOneAtATime ? this.dialect.runTransactionsOneAtATime(transaction) : transaction());
  }
}
