import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { describeError } from '../retry/error-classifier';
import { persistently } from './persistently';
import { ClaimRef, StateTable } from './state-table';

/**
 * Tells when standbys hold everything committed so far (`awaitStandby`). One implementation per
 * database that has standbys to ask (PostgreSQL).
 */
export interface StandbyGate {
  /**
   * Resolves once the standbys hold every transaction committed before the call; rejects with
   * `StandbyLagError` when they do not within the configured time.
   */
  replicated(): Promise<void>;
}

/** Where `passStandbyGate` gives a batch back when the standbys do not confirm it. */
export interface StandbyGateTarget {
  gate: StandbyGate;
  table: StateTable;
  dataSource: DataSource;
  logger: Logger;
}

/**
 * Waits, once for a whole claimed batch, until the standbys hold its rows. When they do not in
 * time, gives the batch back unattempted (an unconfirmed row must not be sent, and a lagging
 * standby is no fault of the message) and resolves false; the caller then leaves the batch alone.
 */
export async function passStandbyGate(target: StandbyGateTarget, batch: ClaimRef[]): Promise<boolean> {
  try {
    await target.gate.replicated();
    return true;
  } catch (error) {
    const released = await persistently(() => target.table.release(target.dataSource, batch)).catch(() => 0);
    target.logger.warn(
      `Gave back ${released} claimed ${target.table.label} row(s) unattempted: ${describeError(error, 500)}` +
        (released < batch.length ? '; the stuck detector reclaims the rest' : ''),
    );
    return false;
  }
}
