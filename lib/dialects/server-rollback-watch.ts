import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import {
  AfterQueryEvent,
  DataSource,
  EntityManager,
  EntitySubscriberInterface,
  QueryRunner,
  TransactionCommitEvent,
  TransactionRollbackEvent,
  TransactionStartEvent,
} from 'typeorm';
import { OutboxTransactionRolledBackError } from '../errors';
import { DATABASE_DIALECT, OUTBOX_DATA_SOURCE } from '../outbox.constants';
import { DatabaseDialect } from './database-dialect';

/**
 * Remembers the transactions that the database server rolled back by itself while TypeORM still
 * holds them open (InnoDB on a deadlock: see `DatabaseDialect.rollsBackTransaction`), so that the
 * outbox never writes in one. A caller may catch the statement's error and go on; its later
 * statements then run in autocommit, and a message written there would be sent though the
 * business change it belongs to is gone.
 *
 * It listens to the failed statements of the DataSource's query runners (a TypeORM subscriber):
 * nothing is asked of the server, so a publish costs no extra round-trip. Where the dialect
 * knows no such error (PostgreSQL refuses every statement of a failed transaction until it
 * ends), it does not listen at all.
 */
@Injectable()
export class ServerRollbackWatch implements EntitySubscriberInterface, OnApplicationShutdown {
  /** Per query runner whose open transaction the server rolled back: the statement's error. */
  private readonly rolledBack = new WeakMap<QueryRunner, unknown>();
  private readonly rollsBack?: (error: unknown) => boolean;

  constructor(
    @Inject(OUTBOX_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(DATABASE_DIALECT) dialect: DatabaseDialect,
  ) {
    this.rollsBack = dialect.rollsBackTransaction?.bind(dialect);
    if (this.rollsBack) dataSource.subscribers.push(this);
  }

  /**
   * Throws when the server has rolled back the transaction of `manager`, before `what` (the
   * start of the error's sentence, e.g. `publish()`) writes in it.
   * @throws OutboxTransactionRolledBackError
   */
  assertNotRolledBack(manager: EntityManager, what: string): void {
    const runner = manager.queryRunner;
    if (runner && this.rolledBack.has(runner)) throw new OutboxTransactionRolledBackError(what, this.rolledBack.get(runner));
  }

  afterQuery(event: AfterQueryEvent): void {
    const runner = event.queryRunner;
    if (event.success || !runner?.isTransactionActive || this.rolledBack.has(runner)) return;
    if (this.rollsBack!(event.error)) this.rolledBack.set(runner, event.error);
  }

  afterTransactionStart(event: TransactionStartEvent): void {
    // A new outermost transaction on a reused runner; a savepoint in a rolled-back one stays marked.
    if (depthOf(event.queryRunner) === 1) this.rolledBack.delete(event.queryRunner);
  }

  afterTransactionCommit(event: TransactionCommitEvent): void {
    this.ended(event.queryRunner);
  }

  afterTransactionRollback(event: TransactionRollbackEvent): void {
    this.ended(event.queryRunner);
  }

  onApplicationShutdown(): void {
    const index = this.dataSource.subscribers.indexOf(this);
    if (index >= 0) this.dataSource.subscribers.splice(index, 1);
  }

  private ended(runner: QueryRunner): void {
    if (!runner.isTransactionActive) this.rolledBack.delete(runner);
  }
}

/** How many transaction levels `runner` has open; TypeORM keeps it on every query runner but does not declare it. */
function depthOf(runner: QueryRunner): number | undefined {
  const depth = (runner as unknown as { transactionDepth?: unknown }).transactionDepth;
  return typeof depth === 'number' ? depth : undefined;
}
