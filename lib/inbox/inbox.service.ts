import { TransactionHost } from '@nestjs-cls/transactional';
import type { Nack } from '@golevelup/nestjs-rabbitmq';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { InboxDialect, InboxRow } from '../dialects/inbox-dialect';
import { ServerRollbackWatch } from '../dialects/server-rollback-watch';
import { OutboxError } from '../errors';
import { MessageStatus } from '../message/message-status';
import { INBOX_DIALECT, OUTBOX_DATA_SOURCE, OUTBOX_OPTIONS } from '../naming/injection-tokens';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { backoffDelayMs, BackoffPolicy } from '../retry/backoff';
import { classifyFailure, describeError } from '../retry/error-classifier';
import type { AmqpMessage } from './amqp-message';
import { DeliveryHolds } from './delivery-holds';
import { isNack, nack } from '../transport/amqp/golevelup';
import { identifyDelivery, isRedelivery } from './identify-delivery';
import { InboxHandlerDefinition } from './inbox-handler-options';
import { STARTED_NOTES } from './inbox.messages';
import { InboxWakeup } from './inbox-wakeup';
import { errorType, OUTBOX_EVENTS } from '../observability/outbox-events';
import { endSpan, runInSpan, startSpanFrom, TracedOperation } from '../observability/outbox-tracing';
import { printable } from '../message/printable';
import { RecordingFallback } from './recording-fallback';
import { allConnections } from './subscription-settings';
import { deliveryKey } from './unrecordable-delivery';
import { OUTBOX_TRANSACTION_HOST } from '../naming/outbox-transaction-host';
import { OutboxIdentity } from '../naming/outbox-identity';
import { outboxToken, type OutboxToken } from '../naming/outbox-name';

/** Longest a failed delivery is held before it goes back to the broker (transactional mode). */
const MAX_REDELIVERY_DELAY_MS = 5_000;
/** Pause before handing back a delivery whose handling failed unexpectedly. */
const UNEXPECTED_FAILURE_DELAY_MS = 1_000;

/**
 * Receives deliveries for `@InboxHandler()` methods. Returns `undefined` to acknowledge, or a
 * golevelup `Nack`: `Nack(true)` to have the broker redeliver, `Nack(false)` to dead-letter
 * (the delivery is kept in the inbox as MANUAL_REQUIRED first, so nothing vanishes).
 */
@Injectable()
export class InboxService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('InboxHandler');
  private readonly backoff: BackoffPolicy;
  private readonly holds = new DeliveryHolds();
  private readonly fallback: RecordingFallback;

  constructor(
    @Inject(OUTBOX_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(INBOX_DIALECT) private readonly dialect: InboxDialect,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    private readonly wakeup: InboxWakeup,
    private readonly moduleRef: ModuleRef,
    private readonly identity: OutboxIdentity,
    private readonly serverRollbacks: ServerRollbackWatch,
    @Optional() @Inject(OUTBOX_TRANSACTION_HOST) private readonly transactionHost?: TransactionHost,
  ) {
    this.backoff = { baseMs: options.backoffBaseMs, maxMs: options.backoffMaxMs, jitter: options.backoffJitter };
    this.fallback = new RecordingFallback(dataSource, dialect, this.holds, this.logger);
  }

  /** Held deliveries end early when a connection of golevelup's (they may have come on) drops. */
  onApplicationBootstrap(): void {
    for (const connection of allConnections(this.moduleRef)) {
      if (connection.managedConnection) this.holds.watch(connection.managedConnection);
    }
  }

  /** Hands held deliveries back now, while their channels are still open, instead of after their backoff. */
  beforeApplicationShutdown(): void {
    this.holds.close();
  }

  /**
   * Decides what becomes of one delivery: `undefined` to acknowledge it, or golevelup's `Nack`.
   * Never rejects: golevelup would pass a rejection to the subscription's error handler, and a
   * failure here must not depend on what that does. (Typed `unknown` so that the public types
   * need not name golevelup's.)
   */
  receive(handler: InboxHandlerDefinition, payload: unknown, message: AmqpMessage, run: () => Promise<unknown>): Promise<unknown> {
    const handled = () => this.handle(handler, payload, message, run).catch((error: unknown) => this.unexpected(handler, message, error));
    const operation = this.startProcessSpan(handler, message);
    if (!operation) return handled();
    // The handler runs in the span, continuing the sender's trace: what it publishes continues it too.
    return runInSpan(operation, handled).then((outcome) => {
      endSpan(operation, outcome === undefined ? undefined : new Error('the delivery was handed back or dead-lettered'));
      return outcome;
    });
  }

  /** A consumer span continuing the trace the delivery's headers carry, where an SDK records spans. */
  private startProcessSpan(handler: InboxHandlerDefinition, message: AmqpMessage): TracedOperation | undefined {
    const headers = (message?.properties?.headers ?? {}) as Record<string, unknown>;
    const messageId = message?.properties?.messageId;
    return startSpanFrom(headers, `process ${handler.consumer}`, 'consumer', {
      'messaging.system': 'rabbitmq',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.consumer.group.name': handler.consumer,
      'messaging.destination.name': String(message?.fields?.exchange ?? ''),
      ...(message?.fields?.routingKey ? { 'messaging.rabbitmq.destination.routing_key': String(message.fields.routingKey) } : {}),
      ...(typeof messageId === 'string' ? { 'messaging.message.id': messageId } : {}),
    });
  }

  private async handle(handler: InboxHandlerDefinition, payload: unknown, message: AmqpMessage, run: () => Promise<unknown>): Promise<Nack | undefined> {
    const { row, rejection } = identifyDelivery(handler, payload, message, this.options.inboxMaxBodyBytes);
    this.identity.emit(OUTBOX_EVENTS.received, () => ({ consumer: row.consumer, messageId: row.messageId, type: row.type }));
    if (rejection) return this.reject(row, message, rejection);
    return handler.mode === 'deferred' ? this.store(row, message) : this.processInTransaction(row, message, run);
  }

  /**
   * Transactional mode: the inbox mark and the handler's effects commit together, then ack. A
   * redelivery first commits a mark that counts the attempt: a handler that takes its process
   * down never throws, and would otherwise be delivered again forever.
   */
  private async processInTransaction(row: InboxRow, message: AmqpMessage, run: () => Promise<unknown>): Promise<Nack | undefined> {
    const start = isRedelivery(message) ? await this.markStarted(row, message) : { marked: false };
    if (isNack(start)) return start;
    const startMarked = start.marked;
    const txHost = this.requireTransactionHost();
    let processed = false;
    const started = performance.now();
    const transaction = () =>
      txHost.withTransaction(async () => {
        // A row born DONE keeps no body: nobody reads a processed body again, and a kilobyte less
        // per delivery is write volume the handler's transaction does not pay. A failed attempt
        // stores the body (recordFailure), for the operator.
        const acquired = await this.dialect.acquire(txHost.tx, { ...row, payload: '', headers: '{}' }, startMarked);
        if (acquired.kind === 'process') {
          await run();
          // The handler may have caught a deadlock: its inbox mark is gone then, and committing would
          // acknowledge a delivery nothing records as handled. It fails, and is delivered again.
          this.serverRollbacks.assertNotRolledBack(txHost.tx, `${printable(row.consumer)}'s handler transaction`);
          processed = true;
        } else if (acquired.status === MessageStatus.MANUAL_REQUIRED) {
          // Not silent: a replay (e.g. from the dead-letter queue) needs the row requeued first.
          this.logger.warn(
            `${printable(row.consumer)} skipped message ${printable(row.messageId)}: it was given up earlier (MANUAL_REQUIRED); set its inbox row to FAILED to process a redelivery`,
          );
        }
      });
    try {
      // On a single-connection database (SQLite), concurrent deliveries' transactions would nest.
      await (this.dialect.runTransactionsOneAtATime ? this.dialect.runTransactionsOneAtATime(transaction) : transaction());
    } catch (error) {
      return this.failed(row, message, error, startMarked);
    }
    this.recorded(row, message);
    const { consumer, messageId, type } = row;
    if (processed) this.identity.emit(OUTBOX_EVENTS.handled, () => ({ consumer, messageId, type, handlerMs: performance.now() - started }));
    else this.identity.emit(OUTBOX_EVENTS.duplicate, () => ({ consumer, messageId, type }));
    return undefined;
  }

  /**
   * Counts the attempt a redelivery is about to start. `marked`: counted (false for a duplicate,
   * which the transaction then finds); a Nack when the attempts are used up or nothing could be
   * recorded.
   */
  private async markStarted(row: InboxRow, message: AmqpMessage): Promise<{ marked: boolean } | Nack> {
    let mark;
    try {
      mark = await this.dialect.markStarted(this.dataSource, row, STARTED_NOTES);
    } catch (error) {
      return this.fallback.recordingFailed(row, message, error, 'counting the attempt about to start');
    }
    this.recorded(row, message);
    if (mark?.status === MessageStatus.MANUAL_REQUIRED) {
      this.logger.error(
        `${printable(row.consumer)} gave up on message ${printable(row.messageId)} without running the handler (MANUAL_REQUIRED, dead-lettered): its ${mark.attempts} attempts are used up, and the last one started and never finished, probably because its process died`,
      );
      return nack(false);
    }
    return { marked: mark !== undefined };
  }

  /** Deferred mode: stored PENDING and acknowledged; the inbox worker runs the handler. */
  private async store(row: InboxRow, message: AmqpMessage): Promise<Nack | undefined> {
    let stored: boolean;
    try {
      stored = await this.dialect.insertPending(this.dataSource, row);
    } catch (error) {
      return this.fallback.recordingFailed(row, message, error, 'storing it');
    }
    this.recorded(row, message);
    if (stored) this.wakeup.wake();
    else this.identity.emit(OUTBOX_EVENTS.duplicate, () => ({ consumer: row.consumer, messageId: row.messageId, type: row.type }));
    return undefined;
  }

  private async failed(row: InboxRow, message: AmqpMessage, error: unknown, attemptCounted: boolean): Promise<Nack | undefined> {
    const fatal = classifyFailure(error, this.options.isFatalError) === 'fatal';
    const description = describeError(error, this.options.lastErrorMaxLength);
    let status;
    try {
      status = await this.dialect.recordFailure(this.dataSource, row, description, fatal, attemptCounted);
    } catch (recordError) {
      return this.fallback.recordingFailed(row, message, recordError, `recording a failed attempt (${describeError(error, 300)})`);
    }
    this.recorded(row, message);
    if (status === undefined) return undefined; // handled meanwhile by a concurrent delivery
    const subject = `${printable(row.consumer)} failed on message ${printable(row.messageId)}`;
    const event = {
      table: 'inbox' as const,
      consumer: row.consumer,
      messageId: row.messageId,
      type: row.type,
      error: description,
      errorType: errorType(error),
    };
    if (status.status === MessageStatus.MANUAL_REQUIRED) this.identity.emit(OUTBOX_EVENTS.manualRequired, () => ({ ...event, attempts: status.attempts }));
    else this.identity.emit(OUTBOX_EVENTS.retryScheduled, () => ({ ...event, attempt: status.attempts }));
    if (status.status === MessageStatus.MANUAL_REQUIRED) {
      this.logger.error(`${printable(row.consumer)} gave up on message ${printable(row.messageId)} (MANUAL_REQUIRED, dead-lettered): ${description}`);
      return nack(false);
    }
    // Hold the delivery for a backoff before handing it back, so a short outage downstream does
    // not burn every attempt in a second; capped because the delivery occupies a prefetch slot,
    // and cut short when the connection drops (the broker has taken the delivery back then).
    const delayMs = Math.min(backoffDelayMs(status.attempts, this.backoff), MAX_REDELIVERY_DELAY_MS);
    this.logger.warn(`${subject} (attempt ${status.attempts}); redelivering in ${delayMs} ms: ${description}`);
    await this.holds.hold(delayMs);
    return nack(true);
  }

  private async reject(row: InboxRow, message: AmqpMessage, reason: string): Promise<Nack | undefined> {
    try {
      await this.dialect.recordFailure(this.dataSource, row, reason, true);
    } catch (error) {
      return this.fallback.recordingFailed(row, message, error, `recording its rejection (${reason})`);
    }
    this.recorded(row, message);
    this.identity.emit(OUTBOX_EVENTS.manualRequired, () => ({
      table: 'inbox',
      consumer: row.consumer,
      messageId: row.messageId,
      type: row.type,
      attempts: 1,
      error: reason,
      errorType: 'RejectedDelivery',
    }));
    this.logger.error(`${printable(row.consumer)} rejected message ${printable(row.messageId)} (MANUAL_REQUIRED, dead-lettered): ${reason}`);
    return nack(false);
  }

  /** A recording succeeded: the database is serving, and this delivery's failure streak (if any) ends. */
  private recorded(row: InboxRow, message: AmqpMessage): void {
    this.fallback.recorded(() => deliveryKey(row.consumer, message));
  }

  /** A failure no step above expected: logged, and the delivery handed back after a pause. */
  private async unexpected(handler: InboxHandlerDefinition, message: AmqpMessage, error: unknown): Promise<Nack | undefined> {
    try {
      this.logger.error(
        `${printable(handler.consumer)}: handling message ${printable(message?.properties?.messageId)} failed unexpectedly (${describeError(error, 500)}); handing it back to the broker`,
      );
      await this.holds.hold(UNEXPECTED_FAILURE_DELAY_MS);
    } catch {
      // Nothing may escape: see receive().
    }
    return nack(true);
  }

  private requireTransactionHost(): TransactionHost {
    if (!this.transactionHost) {
      throw new OutboxError('@InboxHandler needs @nestjs-cls/transactional: register ClsModule with ClsPluginTransactional');
    }
    return this.transactionHost;
  }
}

/** Token of the outbox `name`'s `InboxService` (the class itself for the default outbox). */
export function getInboxServiceToken(name?: string): OutboxToken<InboxService> {
  return outboxToken(InboxService, 'InboxService', name);
}
