import { Logger } from '@nestjs/common';
import { ClaimedMessage } from '../dialects/outbox-dialect';
import { FailedSettlement } from '../engine/state-table';
import { MessageStatus } from '../message/message-status';
import { printable } from '../message/printable';
import { OutboxIdentity } from '../naming/outbox-identity';
import { errorType, listening, OUTBOX_EVENTS } from '../observability/outbox-events';

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

/**
 * What a lane's batches came to, told three ways: counted (`stats`), logged (retries in one line
 * per batch, each message given up on in its own) and announced as `OUTBOX_EVENTS`.
 */
export class LaneOutcomes {
  readonly stats: DispatcherStats = { claimed: 0, sent: 0, failed: 0, released: 0, fenced: 0 };

  /**
   * @param lane the lane's name: its transport's
   * @param identity the outbox whose events these are
   */
  constructor(
    private readonly lane: string,
    private readonly identity: OutboxIdentity,
    private readonly logger: Logger,
  ) {}

  /** A batch given back unattempted before it was sent (its rows not yet on the standbys). */
  heldBack(claimed: number): void {
    this.stats.released += claimed;
  }

  /** Accounts for a DONE statement of the `DoneSettler`: rows it found taken over were fenced off. */
  settledLater(rows: number, changed: number): void {
    if (changed >= rows) return;
    const lost = rows - changed;
    this.stats.fenced += lost;
    this.logger.warn(`${lost} claim(s) were no longer held when settled (taken over, or settled by a try whose reply was lost)`);
    this.identity.emit(OUTBOX_EVENTS.claimLost, () => ({ table: 'outbox', transport: this.lane, count: lost }));
  }

  /** The batch's outcomes as events (see `OUTBOX_EVENTS`). */
  announce(claimed: ClaimedMessage[], results: PromiseSettledResult<unknown>[], failed: FailedSettlement[], sendMs: number[] | undefined, lost: number): void {
    const transport = this.lane;
    // Checked once per batch: nothing is built per message for a channel nobody listens to.
    if (listening(OUTBOX_EVENTS.sent)) {
      const now = Date.now();
      claimed.forEach((message, index) => {
        if (results[index].status !== 'fulfilled') return;
        this.identity.emit(OUTBOX_EVENTS.sent, () => ({
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
        this.identity.emit(OUTBOX_EVENTS.manualRequired, () => ({ ...common, attempts: message.attempts + 1 }));
      else this.identity.emit(OUTBOX_EVENTS.retryScheduled, () => ({ ...common, attempt: message.attempts + 1, delayMs: settlement.delayMs }));
    }
    if (lost > 0) this.identity.emit(OUTBOX_EVENTS.claimLost, () => ({ table: 'outbox', transport, count: lost }));
  }

  /** Counts and logs a settled batch: `sent` of it DONE, `failed`, `released` unattempted, `settled` of it still held. */
  record(batch: ClaimedMessage[], sent: number, failed: FailedSettlement[], released: number, settled: number): void {
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
        `Gave up on message ${printable(message.messageId)} (type ${printable(message.type)}, transport ${this.lane}, ` +
          `attempt ${message.attempts + 1} of ${message.maxAttempts}; MANUAL_REQUIRED, an operator requeues or abandons it): ${settlement.error}`,
      );
    }
  }
}
