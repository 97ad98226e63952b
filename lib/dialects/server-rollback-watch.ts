import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { DataSource, EntityManager, QueryRunner, TransactionCommitEvent, TransactionRollbackEvent, TransactionStartEvent } from 'typeorm';
import { OutboxTransactionRolledBackError, ServerTransactionEnding } from '../errors';
import { DATABASE_DIALECT, OUTBOX_DATA_SOURCE } from '../naming/injection-tokens';
import { DatabaseDialect } from './database-dialect';
import { AfterQueryEvent, TransactionListener, transactionSubscriberOf } from './transaction-subscriber';
import { depthOf, TransactionSlot } from './transaction-slot';

/**
 * Remembers the transactions that the database server ended by itself while TypeORM still holds
 * them open, so that the outbox never writes in one: InnoDB rolls back the whole transaction on
 * a deadlock (see `DatabaseDialect.rollsBackTransaction`), and a caller may catch the statement's
 * error and go on; its later statements then run in autocommit, and a message written there
 * would be sent though the business change it belongs to is gone. A raw `COMMIT` or an implicit
 * one (DDL) leaves the same autocommit behind, on PostgreSQL too; the server's answer to it says
 * so (`DatabaseDialect.reportsNoTransaction`).
 *
 * It follows the statements of the DataSource's query runners (`TransactionSubscriber`) and reads
 * what the server answered anyway: nothing is asked of the server, so a publish costs no extra
 * round-trip. PostgreSQL needs no error list: it refuses every statement of a failed transaction
 * until it ends. Where the dialect tells neither (SQLite), it does not listen at all.
 */
@Injectable()
export class ServerRollbackWatch implements TransactionListener, OnApplicationShutdown {
  /** Per query runner whose open transaction the server ended: how. */
  private readonly ended = new TransactionSlot<ServerTransactionEnding>();
  private readonly stopFollowingTransactions?: () => void;

  constructor(
    @Inject(OUTBOX_DATA_SOURCE) dataSource: DataSource,
    @Inject(DATABASE_DIALECT) private readonly dialect: DatabaseDialect,
  ) {
    if (dialect.rollsBackTransaction || dialect.reportsNoTransaction) {
      this.stopFollowingTransactions = transactionSubscriberOf(dataSource).listen('server-rollback-watch', this);
    }
  }

  /**
   * Throws when the server has rolled back the transaction of `manager`, before `what` (the
   * start of the error's sentence, e.g. `publish()`) writes in it.
   * @throws OutboxTransactionRolledBackError
   */
  assertNotRolledBack(manager: EntityManager, what: string): void {
    const runner = manager.queryRunner;
    const ending = runner && this.ended.get(runner);
    if (ending) throw new OutboxTransactionRolledBackError(what, ending);
  }

  afterQuery(event: AfterQueryEvent): void {
    const runner = event.queryRunner;
    if (!runner?.isTransactionActive || this.ended.has(runner)) return;
    // TypeORM's own COMMIT, ROLLBACK and (MySQL) the isolation level set before START TRANSACTION
    // answer "no transaction" too: the transaction events below clear what they mark.
    if (event.success) {
      if (this.dialect.reportsNoTransaction?.(event.rawResults, runner)) this.ended.set(runner, { statement: String(event.query) });
    } else if (this.dialect.rollsBackTransaction?.(event.error)) {
      this.ended.set(runner, { error: event.error });
    }
  }

  afterTransactionStart(event: TransactionStartEvent): void {
    // A new outermost transaction on a reused runner; a savepoint in an ended one stays marked.
    if (depthOf(event.queryRunner) === 1) this.ended.delete(event.queryRunner);
  }

  afterTransactionCommit(event: TransactionCommitEvent): void {
    this.forgetEnded(event.queryRunner);
  }

  afterTransactionRollback(event: TransactionRollbackEvent): void {
    this.forgetEnded(event.queryRunner);
  }

  onApplicationShutdown(): void {
    this.stopFollowingTransactions?.();
  }

  private forgetEnded(runner: QueryRunner): void {
    if (!runner.isTransactionActive) this.ended.delete(runner);
  }
}
