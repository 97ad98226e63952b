import { OutboxStats, TableStats } from '../admin/outbox-stats';

/** Limits past which `OutboxHealthIndicator` reports the outbox down. Each is off when absent. */
export interface OutboxHealthThresholds {
  /** The outbox's oldest due message may wait this long past its time. */
  maxLagMs?: number;
  /** This many MANUAL_REQUIRED rows, in the outbox and the inbox together, are tolerated. */
  maxManualRequired?: number;
  /** The inbox's oldest due delivery (deferred mode) may wait this long past its time. */
  maxInboxLagMs?: number;
}

/** The numbers a health check reports about the tables. */
export interface OutboxHealthFigures {
  /** The outbox table's figures. */
  outbox: {
    /** How long the oldest due row has waited past its time; 0 when none is due. */
    lagMs: number;
    /** PENDING and FAILED rows whose next attempt time has passed. */
    due: number;
    /** PROCESSING rows. */
    inFlight: number;
    /** MANUAL_REQUIRED rows, waiting for an operator. */
    manualRequired: number;
  };
  /** The inbox table's figures. */
  inbox: {
    /** How long the oldest due row has waited past its time; 0 when none is due. */
    lagMs: number;
    /** PENDING and FAILED rows whose next attempt time has passed. */
    due: number;
    /** PROCESSING rows. */
    inFlight: number;
    /** MANUAL_REQUIRED rows, waiting for an operator. */
    manualRequired: number;
  };
}

/** The stats a health check reports, without the per-status detail. */
export function healthFigures(stats: OutboxStats): OutboxHealthFigures {
  const figures = (table: TableStats) => ({
    lagMs: table.lagMs,
    due: table.due,
    inFlight: table.inFlight,
    manualRequired: table.counts.MANUAL_REQUIRED,
  });
  return { outbox: figures(stats.outbox), inbox: figures(stats.inbox) };
}

/** What passes a threshold, one sentence each; empty when every figure is within its limit. */
export function thresholdProblems(figures: OutboxHealthFigures, thresholds: OutboxHealthThresholds): string[] {
  const problems: string[] = [];
  const { maxLagMs, maxManualRequired, maxInboxLagMs } = thresholds;
  if (maxLagMs !== undefined && figures.outbox.lagMs > maxLagMs) {
    problems.push(`outbox lag ${figures.outbox.lagMs} ms is over maxLagMs ${maxLagMs}`);
  }
  if (maxInboxLagMs !== undefined && figures.inbox.lagMs > maxInboxLagMs) {
    problems.push(`inbox lag ${figures.inbox.lagMs} ms is over maxInboxLagMs ${maxInboxLagMs}`);
  }
  const manualRequired = figures.outbox.manualRequired + figures.inbox.manualRequired;
  if (maxManualRequired !== undefined && manualRequired > maxManualRequired) {
    problems.push(`${manualRequired} MANUAL_REQUIRED rows are over maxManualRequired ${maxManualRequired}`);
  }
  return problems;
}
