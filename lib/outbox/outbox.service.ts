import { TransactionHost } from '@nestjs-cls/transactional';
import { Inject, Injectable, Optional } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { OutboxDialect } from '../dialects/outbox-dialect';
import { ServerRollbackWatch } from '../dialects/server-rollback-watch';
import { OutboxError, OutboxOutsideTransactionError } from '../errors';
import { OutboxMessage, OutboxWriteOptions, PublishResult } from '../message/outbox-message';
import { columnText, shortStringText } from '../message/message-text';
import { assertMessageObject, NewOutboxRow, toNewOutboxRow } from '../message/validate-message';
import { OUTBOX_DATA_SOURCE, OUTBOX_DIALECT, OUTBOX_OPTIONS, OUTBOX_TRANSPORTS } from '../naming/injection-tokens';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { OutboxTransports } from '../transport/outbox-transports';
import { OutboxMessageInvalidError } from '../errors';
import { OUTBOX_EVENTS } from '../observability/outbox-events';
import { activeTraceHeaders } from '../observability/outbox-tracing';
import { transportOf } from './message-router';
import { OutboxWakeup } from './outbox-wakeup';
import { CommitHandoff } from './commit-handoff';
import { withStatementDeadline } from '../dialects/statement-deadline';
import { OUTBOX_TRANSACTION_HOST } from '../naming/outbox-transaction-host';
import { OutboxIdentity } from '../naming/outbox-identity';

/**
 * Writes messages into the outbox as part of the caller's transaction, so a message exists
 * if and only if the business change committed. It never writes in auto-commit.
 */
@Injectable()
export class OutboxService {
  /**
   * Nest creates it: inject it rather than constructing it.
   * @internal
   */
  constructor(
    @Inject(OUTBOX_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(OUTBOX_DIALECT) private readonly dialect: OutboxDialect,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    @Inject(OUTBOX_TRANSPORTS) private readonly transports: OutboxTransports,
    private readonly wakeup: OutboxWakeup,
    private readonly handoff: CommitHandoff,
    private readonly identity: OutboxIdentity,
    private readonly serverRollbacks: ServerRollbackWatch,
    @Optional() @Inject(OUTBOX_TRANSACTION_HOST) private readonly transactionHost?: TransactionHost,
  ) {}

  /**
   * Stores `message` in the current transaction; it is sent after that transaction commits.
   * Publishing the same `(type, bizKey)` or `messageId` twice is a no-op reported as
   * `duplicate: true`.
   * The message is stored for its transport (see `OutboxMessage.transport`); where this process
   * configures that transport, the transport checks the message's address now.
   * @throws OutboxOutsideTransactionError when no transaction is active
   * @throws OutboxTransactionRolledBackError when the database server has already rolled the
   *   transaction back (MySQL/MariaDB after a deadlock whose error was caught): retry the whole transaction
   * @throws OutboxMessageInvalidError when the message cannot be stored or sent as given (its `field` names what)
   * @throws DatabaseTimeoutError when the database does not answer within `statementTimeoutMs`
   */
  async publish<TPayload>(message: OutboxMessage<TPayload>, options?: OutboxWriteOptions): Promise<PublishResult> {
    assertMessageObject(message);
    const transport = transportOf(message, this.options.route, this.transports.defaultName);
    const row = toNewOutboxRow(withActiveTrace(message), transport, this.options);
    const problem = this.transports.get(transport)?.addressProblem?.(message);
    if (problem) throw new OutboxMessageInvalidError(`${problem.message} (transport "${transport}")`, problem.field);
    const manager = this.transactionManager('publish', options);
    const result = await withStatementDeadline(this.options.statementTimeoutMs, () => this.store(manager, row, transport));
    if (!result.duplicate) this.identity.emit(OUTBOX_EVENTS.published, () => ({ messageId: row.messageId, type: row.type, transport }));
    return result;
  }

  private async store(manager: EntityManager, row: NewOutboxRow, transport: string): Promise<PublishResult> {
    // Sent from memory after the commit where this process's dispatcher takes it; claimed otherwise.
    const claim = this.dialect.insertClaimed ? this.handoff.claimFor(manager, row) : undefined;
    if (claim) {
      const inserted = await this.dialect.insertClaimed!(manager, row, claim);
      if (!inserted) return this.duplicateOf(manager, row);
      this.handoff.record(manager, row, claim, inserted);
    } else {
      if (!(await this.dialect.insert(manager, row))) return this.duplicateOf(manager, row);
      await this.wakeup.published(manager, transport);
    }
    return { messageId: row.messageId, duplicate: false };
  }

  /**
   * Abandons the never-sent messages of a reverted business event (PENDING, FAILED or
   * MANUAL_REQUIRED become ABANDONED and are never sent), in the current transaction, and so do
   * the messages this transaction published. Messages already sent, or being sent right now
   * (PROCESSING), are untouched.
   * @returns how many messages were abandoned
   * @throws OutboxTransactionRolledBackError when the database server has already rolled the transaction back
   * @throws OutboxMessageInvalidError when `bizKey` or `type` is one publish() would refuse
   */
  async cancel(bizKey: string, type?: string, options?: OutboxWriteOptions): Promise<number> {
    // Checked as publish() checks them: a key no message can have is a caller's bug, not a miss
    // (and PostgreSQL would answer a NUL in it with a raw error).
    const key = columnText('bizKey', bizKey);
    const kind = type === undefined ? undefined : shortStringText('type', type, false);
    const manager = this.transactionManager('cancel', options);
    // Messages this transaction published to send on commit are PROCESSING, yet never sent: abandoned too.
    const abandoned = await withStatementDeadline(this.options.statementTimeoutMs, () =>
      this.dialect.cancel(manager, key, kind, this.handoff.withdraw(manager, key, kind)),
    );
    if (abandoned > 0) this.identity.emit(OUTBOX_EVENTS.abandoned, () => ({ table: 'outbox', count: abandoned }));
    return abandoned;
  }

  private async duplicateOf(manager: EntityManager, row: NewOutboxRow): Promise<PublishResult> {
    const existing = await this.dialect.findDuplicateMessageId(manager, row);
    return { messageId: existing ?? row.messageId, duplicate: true };
  }

  private transactionManager(operation: string, options: OutboxWriteOptions | undefined): EntityManager {
    const manager = options?.manager ?? (this.transactionHost?.isTransactionActive() ? this.transactionHost.tx : undefined);
    if (!manager?.queryRunner?.isTransactionActive) throw new OutboxOutsideTransactionError(operation);
    if (manager.connection !== this.dataSource) {
      throw new OutboxError(`${operation}() was given a transaction of another DataSource than the outbox's; the message would not commit atomically with it`);
    }
    // TypeORM's flag says active; the server may have rolled it back already (InnoDB's deadlock).
    this.serverRollbacks.assertNotRolledBack(manager, `${operation}()`);
    return manager;
  }
}

/**
 * The message with the active trace context (W3C `traceparent`, `tracestate`) added to its
 * headers, so that its send, and its consumers, continue the publisher's trace. Headers that
 * already carry a context keep theirs; headers that are not a plain object are left for
 * validation to refuse.
 */
function withActiveTrace<T>(message: OutboxMessage<T>): OutboxMessage<T> {
  const trace = activeTraceHeaders();
  if (!('traceparent' in trace)) return message;
  const headers = message.headers;
  if (headers !== undefined && (headers === null || typeof headers !== 'object' || Array.isArray(headers) || 'traceparent' in headers)) return message;
  return { ...message, headers: { ...headers, ...trace } };
}
