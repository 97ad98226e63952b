import { RecentActivity } from '../engine/message-views';
import { StatusGroup, StatusSummary } from '../engine/status-summary';
import { MessageStatus } from '../message/message-status';

/** What one table (or one inbox consumer) holds, by the database's clock. */
export interface TableStats {
  /** Rows per status; every status is present, 0 when it has none. */
  counts: Record<MessageStatus, number>;
  /** PENDING and FAILED rows whose next attempt time has passed: waiting for a dispatcher or worker. */
  due: number;
  /** The earliest next attempt time among the due rows; null when none is due. */
  oldestDueAt: Date | null;
  /**
   * How long the oldest due row has waited past its time: the database's clock when the table
   * was counted, minus `oldestDueAt`; 0 when none is due.
   */
  lagMs: number;
  /** PROCESSING rows: claimed and being sent or handled. */
  inFlight: number;
}

/** The outbox in total, and per transport (each dispatched by its own lane). */
export interface OutboxTableStats extends TableStats {
  /** The same figures for each transport's rows, by transport name. */
  byTransport: Record<string, TableStats>;
}

/** The inbox in total, and per consumer. */
export interface InboxStats extends TableStats {
  /** The same figures for each consumer's rows, by consumer name. */
  byConsumer: Record<string, TableStats>;
}

/** A snapshot of both tables, from `OutboxAdmin.stats()`. */
export interface OutboxStats {
  /** The outbox table, in total and per transport. */
  outbox: OutboxTableStats;
  /** The inbox table, in total and per consumer. */
  inbox: InboxStats;
  /** The database's clock when the outbox was counted (the inbox is counted a moment later). */
  at: Date;
}

/** Folds a table's status groups into its stats, with lag measured against the database's clock `at`. */
export function tableStats(groups: StatusGroup[], at: Date): TableStats {
  const counts = Object.fromEntries(Object.values(MessageStatus).map((status) => [status, 0])) as Record<MessageStatus, number>;
  let due = 0;
  let oldestDueAt: Date | null = null;
  for (const group of groups) {
    // A status the library never writes (a row edited by hand) is counted nowhere.
    if (group.status in counts) counts[group.status] += group.count;
    due += group.due;
    if (group.oldestDueAt && (!oldestDueAt || group.oldestDueAt < oldestDueAt)) oldestDueAt = group.oldestDueAt;
  }
  // Never negative: the database rounds its times finer than a Date holds.
  const lagMs = oldestDueAt ? Math.max(0, at.getTime() - oldestDueAt.getTime()) : 0;
  return { counts, due, oldestDueAt, lagMs, inFlight: counts[MessageStatus.PROCESSING] };
}

/** The outbox's stats in total and per transport. */
export function outboxStats({ groups, at }: StatusSummary): OutboxTableStats {
  return { ...tableStats(groups, at), byTransport: statsByScope(groups, at) };
}

/** The inbox's stats in total and per consumer. */
export function inboxStats({ groups, at }: StatusSummary): InboxStats {
  return { ...tableStats(groups, at), byConsumer: statsByScope(groups, at) };
}

/** Stats per scope (transport or consumer), in name order. */
function statsByScope(groups: StatusGroup[], at: Date): Record<string, TableStats> {
  const byScope = new Map<string, StatusGroup[]>();
  for (const group of groups) {
    const scope = group.scope ?? '';
    byScope.set(scope, [...(byScope.get(scope) ?? []), group]);
  }
  const stats: Record<string, TableStats> = {};
  for (const [scope, scopeGroups] of [...byScope].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    stats[scope] = tableStats(scopeGroups, at);
  }
  return stats;
}

/** What `OutboxAdmin.recentActivity()` counted, per table, in equal slices of a recent window (oldest first). */
export interface OutboxActivity {
  /** Messages sent (`done`) and published (`created`) per slice. */
  outbox: RecentActivity;
  /** Deliveries processed (`done`) and received (`created`) per slice. */
  inbox: RecentActivity;
}
