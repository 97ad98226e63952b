import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import {
  DataSource,
  EntityManager,
  EntitySubscriberInterface,
  QueryRunner,
  TransactionCommitEvent,
  TransactionRollbackEvent,
  TransactionStartEvent,
} from 'typeorm';
import { ClaimedMessage, InsertClaim, InsertedClaimedRow } from '../dialects/outbox-dialect';
import { NewOutboxRow } from '../message/validate-message';
import { OUTBOX_DATA_SOURCE, OUTBOX_INSTANCE_ID, OUTBOX_OPTIONS } from '../outbox.constants';
import { OutboxModuleOptions } from '../options/outbox-module-options';

/** A dispatch lane that takes messages from this process's commits (see `DispatchLane`). */
export interface HandoffLane {
  /** The claim token to insert a message under now, or undefined when the lane takes none now. */
  handoffToken(): string | undefined;
  /** Takes committed messages inserted under its token. */
  handOff(messages: ClaimedMessage[]): void;
}

/** A message recorded by an open transaction, with the savepoint level that wrote it. */
interface Recorded {
  depth: number;
  bizKey: string | null;
  /** Set by `withdraw()`: the savepoint level that cancelled it (its rollback undoes that). */
  withdrawnAt?: number;
  lane: HandoffLane;
  message: ClaimedMessage;
}

/**
 * Sends what this process publishes without a claim: a message is inserted already claimed
 * (PROCESSING, under its lane's token) and handed to the lane from memory once its transaction
 * commits (a TypeORM transaction subscriber), so the dispatcher neither claims nor reads it back.
 * Only what a claim would take at once qualifies: unordered, undelayed messages of a lane that
 * runs in this process, is sending and is not behind.
 *
 * A rolled-back savepoint drops what it recorded; a rollback drops everything. A crash (or a
 * commit the subscriber never hears of) leaves the rows claimed until the stuck detector reclaims
 * them; shutdown gives back what was not sent.
 */
@Injectable()
export class CommitHandoff implements EntitySubscriberInterface, OnApplicationShutdown {
  /** Each outbox of a DataSource keeps its own records on a transaction's query runner. */
  private readonly key = Symbol('nestjs-outbox:handoff');
  private readonly lanes = new Map<string, HandoffLane>();

  constructor(
    @Inject(OUTBOX_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    @Inject(OUTBOX_INSTANCE_ID) private readonly instanceId: string,
  ) {
    dataSource.subscribers.push(this);
  }

  /** Lets `lane` take the messages of transport `name`; returns a function that stops it. */
  register(name: string, lane: HandoffLane): () => void {
    if (!this.options.sendOnCommit) return () => undefined;
    this.lanes.set(name, lane);
    return () => {
      if (this.lanes.get(name) === lane) this.lanes.delete(name);
    };
  }

  /** The claim to insert `row` under in `manager`'s transaction, or undefined to insert it PENDING. */
  claimFor(manager: EntityManager, row: NewOutboxRow): InsertClaim | undefined {
    // Ordered rows wait for their key's earlier rows, and delayed ones for their time: the claim decides those.
    if (row.orderingKey !== null || row.delayMs > 0 || row.availableAt !== null) return undefined;
    // Without a savepoint depth, a rolled-back savepoint's messages could not be told apart.
    if (depthOf(manager.queryRunner!) === undefined) return undefined;
    const token = this.lanes.get(row.transport)?.handoffToken();
    return token === undefined ? undefined : { token, claimedBy: this.instanceId };
  }

  /** Records, in the open transaction, a message inserted under `claim`, to hand off once it commits. */
  record(manager: EntityManager, row: NewOutboxRow, claim: InsertClaim, inserted: InsertedClaimedRow): void {
    const runner = manager.queryRunner!;
    const lane = this.lanes.get(row.transport);
    // The lane stopped since claimFor(): the row stays claimed for the stuck detector, as after a crash.
    if (!lane) return;
    const message: ClaimedMessage = {
      id: inserted.id,
      claimToken: claim.token,
      attempts: 0,
      maxAttempts: row.maxAttempts,
      orderingKey: null,
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
    const data = runner.data as Record<symbol, Recorded[] | undefined>;
    (data[this.key] ??= []).push({ depth: depthOf(runner)!, bizKey: row.bizKey, lane, message });
  }

  /**
   * Takes back, from the open transaction of `manager`, the messages of a business event it
   * recorded (for `cancel()`, which abandons their rows instead): they will not be sent. Returns
   * their row ids.
   */
  withdraw(manager: EntityManager, bizKey: string, type: string | undefined): string[] {
    const runner = manager.queryRunner;
    const recorded = runner && this.recorded(runner);
    if (!recorded) return [];
    const depth = depthOf(runner)!;
    const withdrawn = recorded.filter((r) => r.withdrawnAt === undefined && r.bizKey === bizKey && (type === undefined || r.message.type === type));
    for (const r of withdrawn) r.withdrawnAt = depth;
    return withdrawn.map((r) => r.message.id);
  }

  afterTransactionStart(event: TransactionStartEvent): void {
    // A new outermost transaction on a reused runner: nothing an earlier one recorded survives
    // (its commit failed, so its rows may not exist).
    if (depthOf(event.queryRunner) === 1) this.take(event.queryRunner);
  }

  afterTransactionCommit(event: TransactionCommitEvent): void {
    const runner = event.queryRunner;
    if (runner.isTransactionActive) {
      // A released savepoint: what it recorded now stands or falls with the level around it.
      const depth = depthOf(runner) ?? 0;
      for (const recorded of this.recorded(runner) ?? []) {
        recorded.depth = Math.min(recorded.depth, depth);
        if (recorded.withdrawnAt !== undefined) recorded.withdrawnAt = Math.min(recorded.withdrawnAt, depth);
      }
      return;
    }
    const recorded = this.take(runner);
    if (!recorded) return;
    const byLane = new Map<HandoffLane, ClaimedMessage[]>();
    for (const { lane, message, withdrawnAt } of recorded) {
      // Cancelled in the transaction: its row committed ABANDONED.
      if (withdrawnAt !== undefined) continue;
      const messages = byLane.get(lane);
      if (messages) messages.push(message);
      else byLane.set(lane, [message]);
    }
    for (const [lane, messages] of byLane) lane.handOff(messages);
  }

  afterTransactionRollback(event: TransactionRollbackEvent): void {
    const runner = event.queryRunner;
    if (!runner.isTransactionActive) {
      this.take(runner);
      return;
    }
    // Rolled back to a savepoint: what was recorded inside it was rolled back with it.
    const depth = depthOf(runner) ?? 0;
    const recorded = this.recorded(runner);
    if (!recorded) return;
    (runner.data as Record<symbol, Recorded[] | undefined>)[this.key] = recorded.filter((r) => r.depth <= depth);
    // A cancel rolled back with its savepoint: the message is to be sent again.
    for (const r of recorded) if (r.withdrawnAt !== undefined && r.withdrawnAt > depth) r.withdrawnAt = undefined;
  }

  /**
   * Once every dispatcher has stopped (lanes unregister as their shutdown begins, and give back
   * what a transaction still commits meanwhile): later commits are none of this outbox's business.
   */
  onApplicationShutdown(): void {
    this.lanes.clear();
    const index = this.dataSource.subscribers.indexOf(this);
    if (index >= 0) this.dataSource.subscribers.splice(index, 1);
  }

  private recorded(runner: QueryRunner): Recorded[] | undefined {
    return (runner.data as Record<symbol, Recorded[] | undefined> | undefined)?.[this.key];
  }

  private take(runner: QueryRunner): Recorded[] | undefined {
    const recorded = this.recorded(runner);
    if (recorded) delete (runner.data as Record<symbol, Recorded[] | undefined>)[this.key];
    return recorded;
  }
}

/**
 * How many transaction levels `runner` has open (1: the transaction, more: savepoints). TypeORM
 * keeps it on every query runner but does not declare it; undefined where it is missing.
 */
function depthOf(runner: QueryRunner): number | undefined {
  const depth = (runner as unknown as { transactionDepth?: unknown }).transactionDepth;
  return typeof depth === 'number' ? depth : undefined;
}
