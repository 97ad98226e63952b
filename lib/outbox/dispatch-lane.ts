import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ClaimedMessage, OutboxDialect } from '../dialects/outbox-dialect';
import { ClaimWorker } from '../engine/claim-worker';
import { passStandbyGate, StandbyGate } from '../engine/standby-gate';
import { DoneSettler } from '../engine/done-settler';
import { persistently } from '../engine/persistently';
import { FailurePolicy, settleBatch } from '../engine/settlement';
import { ClaimRef, FailedSettlement } from '../engine/state-table';
import { MessageStatus } from '../message/message-status';
import { errorType, listening, OUTBOX_EVENTS } from '../observability/outbox-events';
import { endSpan, spansMayRecord, startSpanFrom, withTraceContext } from '../observability/outbox-tracing';
import { sendSpanAttributes, sendSpanName } from './send-span';
import { OutboxTransport } from '../message/outbox-transport';
import { OutboxIdentity } from '../naming/outbox-identity';
import { describeError } from '../retry/error-classifier';
import { printable } from '../message/printable';
import { HandoffLane } from './commit-handoff';

/** Counters since start-up, for monitoring and tests. */
export interface DispatcherStats {
  /** Messages claimed. */
  claimed: number;
  /** Messages the transport acknowledged (DONE). */
  sent: number;
  /** Failed attempts (FAILED, or MANUAL_REQUIRED). */
  failed: number;
  /** Given back unattempted: the transport could not send them (disconnected, blocked). */
  released: number;
  /** Settles that found their claim taken over (fenced off by the claim token). */
  fenced: number;
}

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
  readonly stats: DispatcherStats = { claimed: 0, sent: 0, failed: 0, released: 0, fenced: 0 };
  private readonly logger: Logger;
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
      settled: (rows, changed) => this.settledLater(rows, changed),
      failed: (rows, error) =>
        this.logger.error(`Could not mark ${rows} sent message(s) DONE; the stuck detector will reclaim them: ${describeError(error, 500)}`),
    });
  }

  get name(): string {
    return this.spec.name;
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
    // Asked once per batch: without an SDK, nothing is built per message for a span.
    const traced = spansMayRecord();
    const send = (message: ClaimedMessage) => (traced ? this.sendTraced(message) : sendUntraced(this.spec.transport, message));
    const results = await Promise.allSettled(claimed.map((message, index) => (sendMs ? timed(() => send(message), sendMs, index) : send(message))));
    const { done, failed, released } = settleBatch(claimed, results, this.spec.failurePolicy);
    if (released.length > 0) this.paused = true;
    // Sent rows are marked DONE with other batches' (DoneSettler), unless one is ordered: the next
    // message of its key becomes claimable only once it is DONE, so it is settled now.
    const doneLater = !claimed.some((row) => row.orderingKey !== null);
    if (doneLater) this.doneSettler.add(done);
    // Retried: a lost settle would leave its rows PROCESSING until the stuck detector reclaims them.
    const [settledDone, settledFailed, settledReleased] = await Promise.all([
      doneLater ? done.length : persistently(() => dialect.settleDone(dataSource, done)),
      persistently(() => dialect.settleFailed(dataSource, failed)),
      persistently(() => dialect.release(dataSource, released)),
    ]);
    this.record(claimed, done.length, failed, released.length, settledDone + settledFailed + settledReleased);
    this.announce(claimed, results, failed, sendMs, claimed.length - settledDone - settledFailed - settledReleased);
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
    this.stats.released += claimed.length;
    return false;
  }

  /** Accounts for a DONE statement of the `DoneSettler`: rows it found taken over were fenced off. */
  private settledLater(rows: number, changed: number): void {
    if (changed >= rows) return;
    const lost = rows - changed;
    this.stats.fenced += lost;
    this.logger.warn(`${lost} claim(s) were no longer held when settled (taken over, or settled by a try whose reply was lost)`);
    this.spec.identity.emit(OUTBOX_EVENTS.claimLost, () => ({ table: 'outbox', transport: this.spec.name, count: lost }));
  }

  /** The batch's outcomes as events (see `OUTBOX_EVENTS`). */
  private announce(
    claimed: ClaimedMessage[],
    results: PromiseSettledResult<unknown>[],
    failed: FailedSettlement[],
    sendMs: number[] | undefined,
    lost: number,
  ): void {
    const transport = this.spec.name;
    // Checked once per batch: nothing is built per message for a channel nobody listens to.
    if (listening(OUTBOX_EVENTS.sent)) {
      const now = Date.now();
      claimed.forEach((message, index) => {
        if (results[index].status !== 'fulfilled') return;
        this.spec.identity.emit(OUTBOX_EVENTS.sent, () => ({
          messageId: message.messageId,
          type: message.type,
          transport,
          attempt: message.attempts + 1,
          sendMs: sendMs?.[index] ?? 0,
          publishToSentMs: Math.max(0, now - message.createdAt.getTime()),
        }));
      });
    }
    const indexById = failed.length > 0 ? new Map(claimed.map((message, index) => [message.id, index])) : undefined;
    for (const settlement of failed) {
      const index = indexById!.get(settlement.id)!;
      const message = claimed[index];
      const result = results[index];
      const common = {
        table: 'outbox' as const,
        messageId: message.messageId,
        type: message.type,
        transport,
        error: settlement.error,
        errorType: errorType(result.status === 'rejected' ? result.reason : undefined),
        sendMs: sendMs?.[index],
      };
      if (settlement.status === MessageStatus.MANUAL_REQUIRED)
        this.spec.identity.emit(OUTBOX_EVENTS.manualRequired, () => ({ ...common, attempts: message.attempts + 1 }));
      else this.spec.identity.emit(OUTBOX_EVENTS.retryScheduled, () => ({ ...common, attempt: message.attempts + 1, delayMs: settlement.delayMs }));
    }
    if (lost > 0) this.spec.identity.emit(OUTBOX_EVENTS.claimLost, () => ({ table: 'outbox', transport, count: lost }));
  }

  /**
   * One send, in a producer span continuing the trace the message was published in, whose context
   * the message carries on (where an SDK records spans; otherwise a plain send).
   */
  private async sendTraced(message: ClaimedMessage): Promise<void> {
    const operation = startSpanFrom(
      message.headers,
      sendSpanName(message, this.spec.name),
      'producer',
      sendSpanAttributes(this.spec.transport, message, this.spec.name),
    );
    if (!operation) return this.spec.transport.send(message);
    try {
      await this.spec.transport.send({ ...message, headers: withTraceContext(message.headers, operation) });
      endSpan(operation);
    } catch (error) {
      endSpan(operation, error);
      throw error;
    }
  }

  private record(batch: ClaimedMessage[], sent: number, failed: FailedSettlement[], released: number, settled: number): void {
    const claimed = batch.length;
    this.stats.claimed += claimed;
    this.stats.sent += sent;
    this.stats.failed += failed.length;
    this.stats.released += released;
    this.stats.fenced += claimed - settled;
    const retried = failed.filter((settlement) => settlement.status !== MessageStatus.MANUAL_REQUIRED);
    if (retried.length > 0) {
      this.logger.warn(`${retried.length} of ${claimed} message(s) not sent, to be retried; first error: ${retried[0].error}`);
    }
    if (retried.length < failed.length) this.logGiveUps(batch, failed);
    if (released > 0) {
      this.logger.warn(`${released} of ${claimed} message(s) given back unattempted: the transport is unavailable; claiming resumes when it is back`);
    }
    if (settled < claimed) {
      // Also when a settle committed but its reply was lost, and its retry found nothing left to change.
      this.logger.warn(`${claimed - settled} claim(s) were no longer held when settled (taken over, or settled by a try whose reply was lost)`);
    }
  }

  /**
   * One line per message given up on (MANUAL_REQUIRED), which an operator must act on: unlike a
   * retry, it will not mend itself, so it is told apart and named (id, type, transport, reason).
   */
  private logGiveUps(batch: ClaimedMessage[], failed: FailedSettlement[]): void {
    const byId = new Map(batch.map((message) => [message.id, message]));
    for (const settlement of failed) {
      if (settlement.status !== MessageStatus.MANUAL_REQUIRED) continue;
      const message = byId.get(settlement.id)!;
      this.logger.error(
        `Gave up on message ${printable(message.messageId)} (type ${printable(message.type)}, transport ${this.spec.name}, ` +
          `attempt ${message.attempts + 1} of ${message.maxAttempts}; MANUAL_REQUIRED, an operator requeues or abandons it): ${settlement.error}`,
      );
    }
  }
}

/**
 * How long a sent row waits for other batches' to be marked DONE in the same statement. The
 * message is with its receiver already; only a crash within this time sends it again.
 */
const DONE_SETTLE_LINGER_MS = 10;

/** The transport's send, with a synchronous throw (a custom transport's) turned into this send's failure. */
function sendUntraced(transport: OutboxTransport, message: ClaimedMessage): Promise<void> {
  try {
    return transport.send(message);
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Runs `send`, writing how long it took (settled either way) into `durations[index]`. */
async function timed(send: () => Promise<void>, durations: number[], index: number): Promise<void> {
  const started = performance.now();
  try {
    await send();
  } finally {
    durations[index] = performance.now() - started;
  }
}
