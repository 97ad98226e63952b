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
import { classifyFailure, describeError } from '../retry/error-classifier';
import { identifyDelivery } from './identify-delivery';
import { InboxHandlerDefinition } from './inbox-handler-options';
import { InboxWakeup } from './inbox-wakeup';

/** Pause before handing a delivery back when even recording its failure failed (database down). */
const INFRASTRUCTURE_RETRY_DELAY_MS = 1_000;

/**
 * Receives deliveries for `@InboxHandler()` methods. Returns `undefined` to acknowledge, or a
 * golevelup `Nack`: `Nack(true)` to have the broker redeliver, `Nack(false)` to dead-letter
 * (the delivery is kept in the inbox as MANUAL_REQUIRED first, so nothing vanishes).
 */
@Injectable()
export class InboxService {
  private readonly logger = new Logger('InboxHandler');

  constructor(
    @Inject(OUTBOX_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(INBOX_DIALECT) private readonly dialect: InboxDialect,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    private readonly wakeup: InboxWakeup,
    @Optional() private readonly transactionHost?: TransactionHost,
  ) {}

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
    try {
      await txHost.withTransaction(async () => {
        const acquired = await this.dialect.acquire(txHost.tx as never, row);
        if (acquired.kind === 'process') await run();
      });
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
    const fatal = classifyFailure(error, this.options.isFatalError) === 'fatal';
    const description = describeError(error, this.options.lastErrorMaxLength);
    let status: MessageStatus | undefined;
    try {
      status = await this.dialect.recordFailure(this.dataSource, row, description, fatal);
    } catch (recordError) {
      // The database itself is failing: the attempt cannot be counted, so the broker keeps the delivery.
      this.logger.error(`${row.consumer} failed on message ${row.messageId} (${description}), and recording it failed too: ${describeError(recordError, 300)}`);
      await sleep(INFRASTRUCTURE_RETRY_DELAY_MS);
      return new Nack(true);
    }
    if (status === undefined) return undefined; // handled meanwhile by a concurrent delivery
    if (status === MessageStatus.MANUAL_REQUIRED) {
      this.logger.error(`${row.consumer} gave up on message ${row.messageId} (MANUAL_REQUIRED, dead-lettered): ${description}`);
      return new Nack(false);
    }
    this.logger.warn(`${row.consumer} failed on message ${row.messageId}; redelivering: ${description}`);
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
