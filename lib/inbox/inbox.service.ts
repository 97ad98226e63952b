import { Nack } from '@golevelup/nestjs-rabbitmq';
import { TransactionHost } from '@nestjs-cls/transactional';
import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type { ConsumeMessage } from 'amqplib';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { InboxDialect, InboxRow } from '../dialects/inbox-dialect';
import { OutboxError } from '../errors';
import { MessageStatus } from '../message/message-status';
import { INBOX_DIALECT, OUTBOX_DATA_SOURCE, OUTBOX_OPTIONS } from '../outbox.constants';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { backoffDelayMs, BackoffPolicy } from '../retry/backoff';
import { classifyFailure, describeError } from '../retry/error-classifier';
import { identifyDelivery } from './identify-delivery';
import { InboxHandlerDefinition } from './inbox-handler-options';
import { InboxWakeup } from './inbox-wakeup';

/** Pause before handing a delivery back when even recording its failure failed (database down). */
const INFRASTRUCTURE_RETRY_DELAY_MS = 1_000;
/** Longest a failed delivery is held before it goes back to the broker (transactional mode). */
const MAX_REDELIVERY_DELAY_MS = 5_000;

/**
 * Receives deliveries for `@InboxHandler()` methods. Returns `undefined` to acknowledge, or a
 * golevelup `Nack`: `Nack(true)` to have the broker redeliver, `Nack(false)` to dead-letter
 * (the delivery is kept in the inbox as MANUAL_REQUIRED first, so nothing vanishes).
 */
@Injectable()
export class InboxService {
  private readonly logger = new Logger('InboxHandler');
  private readonly backoff: BackoffPolicy;

  constructor(
    @Inject(OUTBOX_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(INBOX_DIALECT) private readonly dialect: InboxDialect,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    private readonly wakeup: InboxWakeup,
    @Optional() private readonly transactionHost?: TransactionHost,
  ) {
    this.backoff = { baseMs: options.backoffBaseMs, maxMs: options.backoffMaxMs, jitter: options.backoffJitter };
  }

  /** True when `@Transactional()` support is configured, as transactional handlers need. */
  get hasTransactionHost(): boolean {
    return this.transactionHost !== undefined;
  }

  async receive(handler: InboxHandlerDefinition, payload: unknown, message: ConsumeMessage, run: () => Promise<unknown>): Promise<Nack | undefined> {
    const { row, rejection } = identifyDelivery(handler, payload, message, this.options.inboxMaxBodyBytes);
    if (rejection) return this.reject(row, rejection);
    return handler.mode === 'deferred' ? this.store(row) : this.processInTransaction(row, run);
  }

  /** Transactional mode: the inbox mark and the handler's effects commit together, then ack. */
  private async processInTransaction(row: InboxRow, run: () => Promise<unknown>): Promise<Nack | undefined> {
    const txHost = this.requireTransactionHost();
    const transaction = () =>
      txHost.withTransaction(async () => {
        // A row born DONE keeps no body: nobody reads a processed body again, and a kilobyte less
        // per delivery is write volume the handler's transaction does not pay. A failed attempt
        // stores the body (recordFailure), for the operator.
        const acquired = await this.dialect.acquire(txHost.tx as never, { ...row, payload: '', headers: '{}' });
        if (acquired.kind === 'process') await run();
        else if (acquired.status === MessageStatus.MANUAL_REQUIRED) {
          // Not silent: a replay (e.g. from the dead-letter queue) needs the row requeued first.
          this.logger.warn(`${row.consumer} skipped message ${row.messageId}: it was given up earlier (MANUAL_REQUIRED); set its inbox row to FAILED to process a redelivery`);
        }
      });
    try {
      // On a single-connection database (SQLite), concurrent deliveries' transactions would nest.
      await (this.dialect.runTransactionsOneAtATime ? this.dialect.runTransactionsOneAtATime(transaction) : transaction());
      return undefined;
    } catch (error) {
      return this.failed(row, error);
    }
  }

  /** Deferred mode: stored PENDING and acknowledged; the inbox worker runs the handler. */
  private async store(row: InboxRow): Promise<Nack | undefined> {
    try {
      if (await this.dialect.insertPending(this.dataSource, row)) this.wakeup.wake();
      return undefined;
    } catch (error) {
      this.logger.error(`Could not store a delivery for ${row.consumer}: ${describeError(error, 500)}; it goes back to the broker`);
      await sleep(INFRASTRUCTURE_RETRY_DELAY_MS);
      return new Nack(true);
    }
  }

  private async failed(row: InboxRow, error: unknown): Promise<Nack | undefined> {
    let status: { status: MessageStatus; attempts: number } | undefined;
    const fatal = classifyFailure(error, this.options.isFatalError) === 'fatal';
    const description = describeError(error, this.options.lastErrorMaxLength);
    try {
      status = await this.dialect.recordFailure(this.dataSource, row, description, fatal);
    } catch (recordError) {
      // The database itself is failing: the attempt cannot be counted, so the broker keeps the delivery.
      this.logger.error(`${row.consumer} failed on message ${row.messageId} (${description}), and recording it failed too: ${describeError(recordError, 300)}`);
      await sleep(INFRASTRUCTURE_RETRY_DELAY_MS);
      return new Nack(true);
    }
    if (status === undefined) return undefined; // handled meanwhile by a concurrent delivery
    if (status.status === MessageStatus.MANUAL_REQUIRED) {
      this.logger.error(`${row.consumer} gave up on message ${row.messageId} (MANUAL_REQUIRED, dead-lettered): ${description}`);
      return new Nack(false);
    }
    // Hold the delivery for a backoff before handing it back, so a short outage downstream does
    // not burn every attempt in a second; capped because the delivery occupies a prefetch slot.
    const delayMs = Math.min(backoffDelayMs(status.attempts, this.backoff), MAX_REDELIVERY_DELAY_MS);
    this.logger.warn(`${row.consumer} failed on message ${row.messageId} (attempt ${status.attempts}); redelivering in ${delayMs} ms: ${description}`);
    await sleep(delayMs);
    return new Nack(true);
  }

  private async reject(row: InboxRow, reason: string): Promise<Nack | undefined> {
    try {
      await this.dialect.recordFailure(this.dataSource, row, reason, true);
    } catch (error) {
      this.logger.error(`Could not record the rejected message ${row.messageId} for ${row.consumer}: ${describeError(error, 300)}`);
      await sleep(INFRASTRUCTURE_RETRY_DELAY_MS);
      return new Nack(true);
    }
    this.logger.error(`${row.consumer} rejected message ${row.messageId} (MANUAL_REQUIRED, dead-lettered): ${reason}`);
    return new Nack(false);
  }

  private requireTransactionHost(): TransactionHost {
    if (!this.transactionHost) {
      throw new OutboxError('@InboxHandler needs @nestjs-cls/transactional: register ClsModule with ClsPluginTransactional');
    }
    return this.transactionHost;
  }
}
