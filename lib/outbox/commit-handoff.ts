import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { DataSource, EntityManager, QueryRunner, TransactionCommitEvent, TransactionRollbackEvent, TransactionStartEvent } from 'typeorm';
import { ClaimedMessage, InsertClaim, InsertedClaimedRow } from '../dialects/outbox-dialect';
import { AfterQueryEvent, TransactionListener, transactionSubscriberOf } from '../dialects/transaction-subscriber';
import { depthOf, TransactionSlot } from '../dialects/transaction-slot';
import { NewOutboxRow } from '../message/validate-message';
import { OUTBOX_DATA_SOURCE, OUTBOX_INSTANCE_ID, OUTBOX_OPTIONS } from '../naming/injection-tokens';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { leaseTimings } from '../options/claim-lease';
import { describeError } from '../retry/error-classifier';
import { holdsTransactionControl } from './transaction-control-sql';

/** A dispatch lane that takes messages from this process's commits (see `DispatchLane`). */
export interface HandoffLane {
  /**
   * The claim token to insert a message under now, or undefined when the lane takes none now
   * (`recordedInTransaction`: how many the same transaction has inserted claimed so far).
   */
  handoffToken(recordedInTransaction: number): string | undefined;
  /**
   * Takes committed messages inserted under its token; with `confirmFirst`, only those the table
   * confirms still claimed.
   */
  handOff(messages: ClaimedMessage[], confirmFirst?: boolean): void;
}

/** The claim a message is inserted under, and the lane that takes it once committed. */
export interface HandoffClaim extends InsertClaim {
  lane: HandoffLane;
}

/** A message recorded by an open transaction, with the savepoint level that wrote it. */
interface Recorded {
  depth: number;
  /** `performance.now()` when it was inserted: its lease runs from about then. */
  recordedAt: number;
  bizKey: string | null;
  /** Set by `withdraw()`: the savepoint level that cancelled it (its rollback undoes that). */
  withdrawnAt?: number;
  lane: HandoffLane;
  message: ClaimedMessage;
}

/** What one query runner's open transaction recorded, and what memory can no longer vouch for. */
interface TransactionRecords {
  records: Recorded[];
  /**
   * The transaction ran transaction control of its own through the runner (a `SAVEPOINT`,
   * `ROLLBACK TO SAVEPOINT`, `COMMIT`... in raw SQL): TypeORM's depth no longer tells which
   * records stand, so the table is asked at commit.
   */
  unsure: boolean;
  /** The outermost COMMIT was answered with ROLLBACK (the transaction had failed): nothing it recorded exists. */
  rolledBack: boolean;
  /** The outermost COMMIT failed: whether it committed is for the table to tell. */
  commitFailed?: boolean;
}

/**
 * The statements TypeORM's own transaction methods send (PostgreSQL's query runner), which the
 * caller's SQL is not: exempt only while one of those methods runs.
 */
const TYPEORM_CONTROL = /^(?:START TRANSACTION|COMMIT|ROLLBACK|(?:RELEASE |ROLLBACK TO )?SAVEPOINT typeorm_\d+)$/;

/**
 * Sends what this process publishes without a claim: a message is inserted already claimed
 * (PROCESSING, under its lane's token) and handed to the lane from memory once its transaction
 * commits (it follows the DataSource's transactions), so the dispatcher neither claims nor reads it back.
 * Only what a claim would take at once qualifies: unordered, undelayed messages of a lane that
 * runs in this process, is sending and is not behind.
 *
 * A rolled-back savepoint drops what it recorded; a rollback drops everything, and so does a
 * COMMIT that PostgreSQL answers with ROLLBACK. Where the transaction ran transaction control
 * of its own in raw SQL, or held a message for long, the table confirms at commit which
 * rows stand (and renews their lease) before any is sent. A crash (or a commit the subscriber
 * never hears of) leaves the rows claimed until the stuck detector reclaims them; shutdown gives
 * back what was not sent.
 */
@Injectable()
export class CommitHandoff implements TransactionListener, OnApplicationShutdown {
  private readonly logger = new Logger('OutboxService');
  /** What each query runner's open transaction recorded. */
  private readonly transactions = new TransactionSlot<TransactionRecords>();
  /** Runners inside one of TypeORM's own transaction methods (whose SQL is not the caller's). */
  private readonly inOwnControl = new WeakSet<QueryRunner>();
  private readonly lanes = new Map<string, HandoffLane>();
  private readonly stopFollowingTransactions: () => void;

  constructor(
    @Inject(OUTBOX_DATA_SOURCE) dataSource: DataSource,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    @Inject(OUTBOX_INSTANCE_ID) private readonly instanceId: string,
  ) {
    this.stopFollowingTransactions = transactionSubscriberOf(dataSource).listen('commit-handoff', this);
  }

  /**
   * Lets `lane` take the messages of transport `name`; returns a function that stops it. Once
   * handed off, a message's lease is renewed by the lane like any claim it holds; until then its
   * transaction holds it, which `handOff` accounts for.
   */
  register(name: string, lane: HandoffLane): () => void {
    if (!this.options.sendOnCommit) return () => undefined;
    this.lanes.set(name, lane);
    return () => {
      if (this.lanes.get(name) === lane) this.lanes.delete(name);
    };
  }

  /** The claim to insert `row` under in `manager`'s transaction, or undefined to insert it PENDING. */
  claimFor(manager: EntityManager, row: NewOutboxRow): HandoffClaim | undefined {
    // Ordered rows wait for their key's earlier rows, and delayed ones for their time: the claim decides those.
    if (row.orderingKey !== null || row.delayMs > 0 || row.availableAt !== null) return undefined;
    // Without a savepoint depth, a rolled-back savepoint's messages could not be told apart.
    const runner = manager.queryRunner!;
    if (depthOf(runner) === undefined) return undefined;
    const lane = this.lanes.get(row.transport);
    const token = lane?.handoffToken(this.transactions.get(runner)?.records.length ?? 0);
    return token === undefined ? undefined : { token, claimedBy: this.instanceId, lane: lane! };
  }

  /**
   * Records, in the open transaction, a message inserted under `claim`, to hand off once it
   * commits (to the claim's lane, which gives it back if it has stopped meanwhile).
   */
  record(manager: EntityManager, row: NewOutboxRow, claim: HandoffClaim, inserted: InsertedClaimedRow): void {
    const runner = manager.queryRunner!;
    const message: ClaimedMessage = {
      id: inserted.id,
      claimToken: claim.token,
      attempts: 0,
      maxAttempts: row.maxAttempts,
      orderingKey: null,
      bizKey: row.bizKey,
      messageId: row.messageId,
      type: row.type,
      exchange: row.exchange,
      routingKey: row.routingKey,
      // The stored text, sent as a claim would read it back.
      payload: row.payload,
      headers: JSON.parse(row.headers) as Record<string, unknown>,
      transport: row.transport,
      destination: row.destination,
      createdAt: inserted.createdAt,
    };
    const transaction = this.transactions.getOrCreate(runner, () => ({ records: [], unsure: false, rolledBack: false }));
    transaction.records.push({ depth: depthOf(runner)!, recordedAt: performance.now(), bizKey: row.bizKey, lane: claim.lane, message });
  }

  /**
   * Takes back, from the open transaction of `manager`, the messages of a business event it
   * recorded (for `cancel()`, which abandons their rows instead): they will not be sent. Returns
   * their row ids.
   */
  withdraw(manager: EntityManager, bizKey: string, type: string | undefined): string[] {
    const runner = manager.queryRunner;
    const recorded = runner && this.transactions.get(runner)?.records;
    if (!recorded) return [];
    const depth = depthOf(runner)!;
    const withdrawn = recorded.filter((r) => r.withdrawnAt === undefined && r.bizKey === bizKey && (type === undefined || r.message.type === type));
    for (const r of withdrawn) r.withdrawnAt = depth;
    return withdrawn.map((r) => r.message.id);
  }

  beforeTransactionStart(event: TransactionStartEvent): void {
    this.inOwnControl.add(event.queryRunner);
  }

  afterTransactionStart(event: TransactionStartEvent): void {
    this.inOwnControl.delete(event.queryRunner);
    // A new outermost transaction on a reused runner: nothing an earlier one recorded survives
    // (its commit failed, so its rows may not exist).
    if (depthOf(event.queryRunner) === 1) this.transactions.delete(event.queryRunner);
  }

  beforeTransactionCommit(event: TransactionCommitEvent): void {
    this.inOwnControl.add(event.queryRunner);
  }

  beforeTransactionRollback(event: TransactionRollbackEvent): void {
    this.inOwnControl.add(event.queryRunner);
  }

  afterQuery(event: AfterQueryEvent): void {
    const runner = event.queryRunner;
    // TypeORM's own statement has run (or failed): whatever comes next is the caller's again.
    const own = this.inOwnControl.has(runner) && TYPEORM_CONTROL.test(event.query);
    if (own) this.inOwnControl.delete(runner);
    const transaction = this.transactions.get(runner);
    if (!transaction) return;
    if (own) {
      // PostgreSQL ends a failed transaction (an error the caller caught) this way, without an error.
      if (event.query === 'COMMIT' && (event.rawResults as { command?: string } | undefined)?.command === 'ROLLBACK') transaction.rolledBack = true;
      // A COMMIT that failed may still have committed: its reply was lost with the connection (a
      // failover, a killed server that a synchronous standby had already confirmed). The table
      // tells which rows stand; without asking, they would wait PROCESSING for the stuck detector.
      else if (event.query === 'COMMIT' && !event.success) this.handOffUnsure(runner, transaction);
    } else if (typeof event.query === 'string' && holdsTransactionControl(event.query)) {
      transaction.unsure = true;
    }
  }

  afterTransactionCommit(event: TransactionCommitEvent): void {
    const runner = event.queryRunner;
    this.inOwnControl.delete(runner);
    if (runner.isTransactionActive) {
      // A released savepoint: what it recorded now stands or falls with the level around it.
      const depth = depthOf(runner) ?? 0;
      for (const recorded of this.transactions.get(runner)?.records ?? []) {
        recorded.depth = Math.min(recorded.depth, depth);
        if (recorded.withdrawnAt !== undefined) recorded.withdrawnAt = Math.min(recorded.withdrawnAt, depth);
      }
      return;
    }
    const transaction = this.transactions.take(runner);
    if (!transaction || transaction.rolledBack) return;
    try {
      this.handOff(transaction);
    } catch (error) {
      // Never the caller's problem: its transaction committed. The rows wait for the stuck detector.
      this.logger.error(`Could not hand committed messages to their dispatcher: ${describeError(error, 500)}`);
    }
  }

  afterTransactionRollback(event: TransactionRollbackEvent): void {
    const runner = event.queryRunner;
    this.inOwnControl.delete(runner);
    if (!runner.isTransactionActive) {
      this.transactions.delete(runner);
      return;
    }
    // Rolled back to a savepoint: what was recorded inside it was rolled back with it.
    const depth = depthOf(runner) ?? 0;
    const transaction = this.transactions.get(runner);
    if (!transaction) return;
    const recorded = transaction.records;
    transaction.records = recorded.filter((r) => r.depth <= depth);
    // A cancel rolled back with its savepoint: the message is to be sent again.
    for (const r of recorded) if (r.withdrawnAt !== undefined && r.withdrawnAt > depth) r.withdrawnAt = undefined;
  }

  /**
   * Once every dispatcher has stopped (lanes unregister as their shutdown begins, and give back
   * what a transaction still commits meanwhile): later commits are none of this outbox's business.
   */
  onApplicationShutdown(): void {
    this.lanes.clear();
    this.stopFollowingTransactions();
  }

  /** Hands the messages of a transaction whose COMMIT failed to their lanes, through the table. */
  private handOffUnsure(runner: QueryRunner, transaction: TransactionRecords): void {
    this.transactions.delete(runner);
    transaction.commitFailed = true;
    try {
      this.handOff(transaction);
    } catch (error) {
      this.logger.error(`Could not hand the messages of a failed commit to their dispatcher: ${describeError(error, 500)}`);
    }
  }

  /**
   * Hands a committed transaction's messages to their lanes: from memory, or, where memory cannot
   * vouch for them, through the table. A record held so long that its lease could run out before
   * the lane's first renewal (within a renewal interval of the hand-off, with another to spare)
   * may have been reclaimed, or be about to be, so its lease is renewed first. With the table
   * asked, withdrawn messages go too: a raw rollback may have undone their cancel, and an
   * ABANDONED row is not confirmed.
   */
  private handOff(transaction: TransactionRecords): void {
    const { leaseMs, renewIntervalMs } = leaseTimings(this.options);
    const heldSince = performance.now() - Math.min(leaseMs / 2, leaseMs - 2 * renewIntervalMs);
    const confirmFirst = transaction.unsure || transaction.commitFailed || transaction.records.some((r) => r.recordedAt < heldSince);
    const byLane = new Map<HandoffLane, ClaimedMessage[]>();
    for (const { lane, message, withdrawnAt } of transaction.records) {
      // Cancelled in the transaction: its row committed ABANDONED.
      if (withdrawnAt !== undefined && !confirmFirst) continue;
      const messages = byLane.get(lane);
      if (messages) messages.push(message);
      else byLane.set(lane, [message]);
    }
    for (const [lane, messages] of byLane) lane.handOff(messages, confirmFirst);
  }
}
