import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ClaimedMessage, OutboxDialect } from '../dialects/outbox-dialect';
import { ClaimWorker } from '../engine/claim-worker';
import { passStandbyGate, StandbyGate } from '../engine/standby-gate';
import { DoneSettler } from '../engine/done-settler';
import { persistently } from '../engine/persistently';
import { FailurePolicy, settleBatch } from '../engine/settlement';
import { ClaimRef } from '../engine/state-table';
import { listening, OUTBOX_EVENTS } from '../observability/outbox-events';
import { OutboxTransport } from '../message/outbox-transport';
import { OutboxIdentity } from '../naming/outbox-identity';
import { describeError } from '../retry/error-classifier';
import { HandoffLane } from './commit-handoff';
import { DispatcherStats, LaneOutcomes } from './lane-outcomes';
import { sendBatch } from './lane-send';

export type { DispatcherStats } from './lane-outcomes';

/** What one lane needs: its transport, its own loop settings, and the shared database parts. */
export interface DispatchLaneSpec {
  name: string;
  transport: OutboxTransport;
  batchSize: number;
  concurrency: number;
  sendTimeoutMs: number;
  /** The claim lease (`stuckReclaimAfterMs`), renewed every `renewIntervalMs` while the lane holds claims. */
  leaseMs: number;
  renewIntervalMs: number;
  dataSource: DataSource;
  dialect: OutboxDialect;
  instanceId: string;
  failurePolicy: FailurePolicy;
  /** The outbox the lane dispatches for: its events and log context carry its name. */
  identity: OutboxIdentity;
  /** With `awaitStandby`: every batch waits until the standbys hold its rows. */
  standbyGate?: StandbyGate;
}

/**
 * One transport's dispatch: claims only that transport's due rows, in short transactions, sends
 * them outside any transaction (all of a batch in flight at once, each awaiting its transport's
 * acknowledgement), and settles the batch with one fenced statement per outcome.
 *
 * While the transport is unavailable nothing is claimed: an outage leaves the lane's messages
 * PENDING or FAILED, cancellable, with their attempts untouched. Messages the transport could not
 * attempt are given back as they were, and the lane stops claiming until its next poll or the
 * transport's return (a circuit that opens on the first refusal and half-opens on each poll).
 * Lanes share nothing but the database pool, so a transport that is slow or down holds up no
 * other transport's messages.
 */
export class DispatchLane implements HandoffLane {
  private readonly logger: Logger;
  private readonly outcomes: LaneOutcomes;
  private readonly worker: ClaimWorker<ClaimedMessage>;
  private readonly doneSettler: DoneSettler<ClaimRef>;
  /** Set when the transport failed sends as unavailable: no claims until the next poll or its return. */
  private paused = false;
  /**
   * The claim token of the messages this process's commits hand to the lane (`CommitHandoff`),
   * while it takes them; one for the lane's life: a reclaim clears a row's token, which fences off
   * a late settle all the same.
   */
  private handoffClaimToken?: string;
  /** Hand-offs waiting for the table to confirm their rows (see `handOff`). */
  private readonly confirming = new Set<Promise<void>>();

  constructor(private readonly spec: DispatchLaneSpec) {
    this.logger = new Logger(spec.identity.logContext(`OutboxDispatcher:${spec.name}`));
    this.outcomes = new LaneOutcomes(spec.name, spec.identity, this.logger);
    const { dataSource, dialect, transport, instanceId, name } = spec;
    this.worker = new ClaimWorker({
      dataSource,
      table: dialect,
      batchSize: spec.batchSize,
      concurrency: spec.concurrency,
      claim: (limit, claimToken) => dialect.claim(dataSource, limit, claimToken, instanceId, name),
      process: (batch) => this.sendAndSettle(batch),
      processTimeoutMs: spec.sendTimeoutMs,
      leaseMs: spec.leaseMs,
      renewIntervalMs: spec.renewIntervalMs,
      isReady: () => !this.paused && (transport.isAvailable?.() ?? true),
      logger: this.logger,
    });
    this.doneSettler = new DoneSettler({
      settle: (rows) => dialect.settleDone(dataSource, rows),
      lingerMs: DONE_SETTLE_LINGER_MS,
      maxRows: spec.batchSize,
      settled: (rows, changed) => this.outcomes.settledLater(rows, changed),
      failed: (rows, error) =>
        this.logger.error(`Could not mark ${rows} sent message(s) DONE; the stuck detector will reclaim them: ${describeError(error, 500)}`),
    });
  }

  get name(): string {
    return this.spec.name;
  }

  /** Counters since start-up. */
  get stats(): DispatcherStats {
    return this.outcomes.stats;
  }

  /** Starts a dispatch run now, or makes the current run go round once more. Never throws. */
  trigger(): void {
    this.worker.trigger();
  }

  /** Lifts a pause and claims: on every poll, and when the transport is back. */
  resume(): void {
    this.paused = false;
    this.trigger();
  }

  /** Dispatches until none of the lane's messages is due and every sent one is DONE; resolves with how many were claimed. */
  async drain(): Promise<number> {
    // Committed messages being confirmed are handed to the worker next: their sends are this drain's too.
    while (this.confirming.size > 0) await Promise.all([...this.confirming]);
    const claimed = await this.worker.drain();
    await this.doneSettler.idle();
    return claimed;
  }

  /** From now on, takes messages this process publishes once they commit (see `CommitHandoff`). */
  startHandoffs(): void {
    this.handoffClaimToken ??= randomUUID();
  }

  /**
   * The token to insert a message under, when the lane would send it at once: its transport is
   * sending, and fewer than a full window (batch size × concurrency) of handed-off messages wait.
   * Otherwise the message is inserted PENDING and waits its turn in the table.
   */
  handoffToken(recordedInTransaction: number): string | undefined {
    if (this.handoffClaimToken === undefined || this.paused || !(this.spec.transport.isAvailable?.() ?? true)) return undefined;
    // A transaction that publishes more than a batch: the rest wait in the table, for any instance.
    if (recordedInTransaction >= this.spec.batchSize) return undefined;
    if (this.worker.handedOffCount >= this.spec.batchSize * this.spec.concurrency) return undefined;
    return this.handoffClaimToken;
  }

  /**
   * Sends committed messages that were inserted under `handoffToken()`; with `confirmFirst`, only
   * those whose rows the table confirms still claimed (renewing their lease), for a transaction
   * whose outcome memory cannot vouch for. Never throws.
   */
  handOff(messages: ClaimedMessage[], confirmFirst = false): void {
    if (!confirmFirst) return this.worker.handOff(messages);
    const confirming = this.confirmThenHandOff(messages).finally(() => this.confirming.delete(confirming));
    this.confirming.add(confirming);
  }

  /** Stops claiming, lets in-flight batches finish, gives back what is still claimed. */
  async stop(): Promise<void> {
    this.handoffClaimToken = undefined;
    // Confirmed rows go to the worker, which sends them or gives them back as it stops.
    while (this.confirming.size > 0) await Promise.all([...this.confirming]);
    await this.worker.stop();
    await this.doneSettler.idle();
  }

  private async confirmThenHandOff(messages: ClaimedMessage[]): Promise<void> {
    const { dialect, dataSource } = this.spec;
    const byToken = new Map<string, string[]>();
    for (const { id, claimToken } of messages) {
      const ids = byToken.get(claimToken);
      if (ids) ids.push(id);
      else byToken.set(claimToken, [id]);
    }
    try {
      const standing = new Set<string>();
      for (const [token, ids] of byToken) {
        // Without a way to ask, none is sent from memory: the stuck detector reclaims what committed.
        const confirmed = dialect.confirmClaimed ? await persistently(() => dialect.confirmClaimed!(dataSource, ids, token)) : [];
        for (const id of confirmed) standing.add(id);
      }
      this.worker.handOff(messages.filter((message) => standing.has(message.id)));
    } catch (error) {
      this.logger.warn(
        `Could not confirm ${messages.length} message(s) inserted claimed; the stuck detector will reclaim those that committed: ${describeError(error, 500)}`,
      );
    }
  }

  private async sendAndSettle(claimed: ClaimedMessage[]): Promise<void> {
    const { dialect, dataSource, standbyGate } = this.spec;
    if (standbyGate && !(await this.standbysHold(standbyGate, claimed))) return;
    // Timed only for a listener: the events are free when nobody subscribes.
    const sendMs = listening(OUTBOX_EVENTS.sent, OUTBOX_EVENTS.retryScheduled, OUTBOX_EVENTS.manualRequired) ? new Array<number>(claimed.length) : undefined;
    const results = await sendBatch(this.spec.transport, this.spec.name, claimed, sendMs);
    const { done, failed, released } = settleBatch(claimed, results, this.spec.failurePolicy);
    if (released.length > 0) this.paused = true;
    // Sent rows are marked DONE with other batches' (DoneSettler), unless one is ordered: the next
    // message of its key becomes claimable only once it is DONE, so it is settled now.
    const doneLater = !claimed.some((row) => row.orderingKey !== null);
    if (doneLater) this.doneSettler.add(done);
    // Retried: a lost settle would leave its rows PROCESSING until the stuck detector reclaims them.
    // An outcome no row had costs no statement, nor the promises of one: under a steady stream
    // most batches are a few messages, all sent.
    const [settledDone, settledFailed, settledReleased] = await Promise.all([
      doneLater ? done.length : persistently(() => dialect.settleDone(dataSource, done)),
      failed.length > 0 ? persistently(() => dialect.settleFailed(dataSource, failed)) : 0,
      released.length > 0 ? persistently(() => dialect.release(dataSource, released)) : 0,
    ]);
    this.outcomes.record(claimed, done.length, failed, released.length, settledDone + settledFailed + settledReleased);
    this.outcomes.announce(claimed, results, failed, sendMs, claimed.length - settledDone - settledFailed - settledReleased);
    // Bounded: a database slower than the broker holds the loops up rather than the settles piling up.
    if (this.doneSettler.pending > this.spec.batchSize * this.spec.concurrency) await this.doneSettler.idle();
  }

  /**
   * Whether the standbys hold the batch's rows; if not, the batch was given back unattempted and
   * the lane claims nothing more until its next poll, as when its transport is down.
   */
  private async standbysHold(gate: StandbyGate, claimed: ClaimedMessage[]): Promise<boolean> {
    const { dialect, dataSource } = this.spec;
    if (await passStandbyGate({ gate, table: dialect, dataSource, logger: this.logger }, claimed)) return true;
    this.paused = true;
    this.outcomes.heldBack(claimed.length);
    return false;
  }
}

/**
 * How long a sent row waits for other batches' to be marked DONE in the same statement. The
 * message is with its receiver already; only a crash within this time sends it again.
 */
const DONE_SETTLE_LINGER_MS = 10;
