import type { Nack } from '@golevelup/nestjs-rabbitmq';
import type { Logger } from '@nestjs/common';
import type { ConsumeMessage } from 'amqplib';
import { DataSource } from 'typeorm';
import { isConnectionError, isTransientConflict } from '../dialects/connection-errors';
import { InboxDialect, InboxRow } from '../dialects/inbox-dialect';
import { describeError } from '../retry/error-classifier';
import { DeliveryHolds } from './delivery-holds';
import { nack } from '../transport/amqp/golevelup';
import { printable } from '../message/printable';
import { RecordingFailures } from './recording-failures';
import { deliveryKey, describeDelivery, reducedForms } from './unrecordable-delivery';

/** Pause before handing back a delivery that could not be recorded because the database is unavailable. */
const UNAVAILABLE_RETRY_DELAY_MS = 1_000;
/** Failures in a row after which a delivery is given up while other deliveries are being recorded. */
const GIVE_UP_AFTER = 5;
/** Failures in a row after which a delivery is given up when nothing else was recorded meanwhile either. */
const GIVE_UP_ALONE_AFTER = 10;
/** Tries of each reduced form that fails as if the database were unavailable. */
const REDUCED_FORM_TRIES = 2;

/**
 * What the inbox does with a delivery it failed to record (its row, its PENDING row, its failed
 * attempt or its rejection), so that no delivery is handed back forever and none vanishes:
 *
 * - the database says it is unavailable (a connection error) or busy (a lock conflict): the
 *   delivery goes back to the broker after a pause, without an attempt counted;
 * - that keeps happening to this very delivery (5 times in a row while other deliveries are
 *   recorded, 10 when nothing else is, e.g. when such deliveries fill the prefetch): the delivery
 *   itself is the problem; it is treated as below;
 * - any other error concerns what the row holds: the delivery is recorded in a reduced form
 *   (`reducedForms`) as MANUAL_REQUIRED, with the cause in `last_error`, and dead-lettered;
 * - when even that fails, it is dead-lettered without a row, with an error in the log that names
 *   everything needed to find it in the dead-letter queue; unless it failed as if the database
 *   were unavailable and no other delivery was recorded meanwhile: an outage is waited out, and
 *   the delivery goes back to the broker.
 */
export class RecordingFallback {
  private readonly failures = new RecordingFailures(GIVE_UP_AFTER, GIVE_UP_ALONE_AFTER);

  constructor(
    private readonly dataSource: DataSource,
    private readonly dialect: InboxDialect,
    private readonly holds: DeliveryHolds,
    private readonly logger: Logger,
  ) {}

  /** Notes a successful recording; `key` is computed only while some delivery is being tracked. */
  recorded(key: () => string): void {
    this.failures.recorded(this.failures.tracking ? key() : undefined);
  }

  /** `what` failed with `error` for the delivery of `row`. */
  async recordingFailed(row: InboxRow, message: ConsumeMessage, error: unknown, what: string): Promise<Nack> {
    const key = deliveryKey(row.consumer, message);
    const subject = `${printable(row.consumer)}: message ${printable(message.properties?.messageId)}`;
    const cause = describeError(error, 500);
    if (isConnectionError(error) || isTransientConflict(error)) {
      const streak = this.failures.failed(key);
      if (!streak.giveUp) {
        this.logger.error(
          `${subject}: ${what} failed, the database is unavailable (${cause}); handed back to the broker in ${UNAVAILABLE_RETRY_DELAY_MS} ms, no attempt counted`,
        );
        return this.handBack();
      }
      const reason = `the inbox could not record it ${streak.failures} times in a row, each time with an error of an unavailable database, while ${what}; last: ${cause}`;
      return this.deadLetter(row, message, key, reason, streak.othersRecorded);
    }
    return this.deadLetter(row, message, key, `the inbox could not record it while ${what}: ${cause}`, false);
  }

  /**
   * Records the delivery in a reduced form and dead-letters it. `databaseServes`: others were
   * recorded meanwhile, so when the reduced forms fail as if the database were unavailable, it is
   * this delivery that fails them; otherwise that is taken for an outage and the delivery is
   * handed back.
   */
  private async deadLetter(row: InboxRow, message: ConsumeMessage, key: string, reason: string, databaseServes: boolean): Promise<Nack> {
    let lastError: unknown;
    for (const form of reducedForms(row, message)) {
      const lastErrorText = `${reason}; ${form.note}`;
      for (let attempt = 1; attempt <= REDUCED_FORM_TRIES; attempt++) {
        try {
          await this.dialect.recordFailure(this.dataSource, form.row, lastErrorText, true);
        } catch (error) {
          lastError = error;
          if (!(isConnectionError(error) || isTransientConflict(error))) break;
          // Tried again first: the pool may have handed out a connection that the last failure killed.
          if (attempt < REDUCED_FORM_TRIES) continue;
          if (!databaseServes) {
            this.logger.error(
              `${describeDelivery(row.consumer, message)}: could not be recorded (${reason}), nor in a reduced form: the database is unavailable (${describeError(error, 300)}); handed back to the broker`,
            );
            return this.handBack();
          }
          break;
        }
        this.failures.forget(key);
        this.logger.error(
          `${printable(row.consumer)}: message ${printable(message.properties?.messageId)} is MANUAL_REQUIRED as ${form.row.messageId} and dead-lettered: ${lastErrorText}`,
        );
        return nack(false);
      }
    }
    this.failures.forget(key);
    this.logger.error(
      `UNRECORDED DELIVERY dead-lettered without an inbox row, find it in the dead-letter queue: ${describeDelivery(row.consumer, message)}; ${reason}; the reduced forms failed too: ${describeError(lastError, 300)}`,
    );
    return nack(false);
  }

  private async handBack(): Promise<Nack> {
    await this.holds.hold(UNAVAILABLE_RETRY_DELAY_MS);
    return nack(true);
  }
}
