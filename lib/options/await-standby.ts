/**
 * `awaitStandby`: send (or run a deferred handler for) a claimed batch only once PostgreSQL
 * standbys hold every row of it, so that a failover to an asynchronous standby never leaves a
 * message sent whose transaction the promoted standby lacks. See docs/semantics.md.
 */
export interface AwaitStandbyOptions {
  /** The standbys' `application_name`s, as `pg_stat_replication` (and `synchronous_standby_names`) list them. */
  standbys: string[];
  /** How many of them must hold the rows; default: all of them. */
  confirmations?: number;
  /** Longest a batch waits before it is given back unattempted (default 5000, ≥ 10). */
  timeoutMs?: number;
  /** Pause between two reads of the standbys' positions while batches wait (default 2, 1 – 1000). */
  pollIntervalMs?: number;
}

/** `AwaitStandbyOptions` with every default applied. */
export type ResolvedAwaitStandby = Required<AwaitStandbyOptions>;

const DEFAULT_TIMEOUT_MS = 5_000;
const DEFAULT_POLL_INTERVAL_MS = 2;

/** The option with its defaults; call only on a value `awaitStandbyProblems` accepted. */
export function resolveAwaitStandby(options: AwaitStandbyOptions): ResolvedAwaitStandby {
  return {
    standbys: [...options.standbys],
    confirmations: options.confirmations ?? options.standbys.length,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    pollIntervalMs: options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS,
  };
}

/** What is wrong with an `awaitStandby` value, one sentence per problem; none for undefined. */
export function awaitStandbyProblems(value: unknown): string[] {
  if (value === undefined) return [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return ['awaitStandby must be an object such as { standbys: ["standby1"] }'];
  }
  const o = value as Record<string, unknown>;
  const problems: string[] = [];
  const known = ['standbys', 'confirmations', 'timeoutMs', 'pollIntervalMs'];
  for (const key of Object.keys(o)) if (!known.includes(key)) problems.push(`awaitStandby.${key} is not an option (known: ${known.join(', ')})`);
  const standbys = o.standbys;
  const names = Array.isArray(standbys) ? standbys : [];
  if (!Array.isArray(standbys) || names.length === 0 || !names.every((name) => typeof name === 'string' && name.length > 0 && name.length <= 63)) {
    problems.push("awaitStandby.standbys must list one or more standbys' application_name (1 – 63 characters each), as pg_stat_replication shows them");
  } else if (new Set(names).size !== names.length) {
    problems.push('awaitStandby.standbys names a standby twice');
  }
  if (o.confirmations !== undefined && !(isInt(o.confirmations) && o.confirmations >= 1 && o.confirmations <= names.length)) {
    problems.push(`awaitStandby.confirmations must be a whole number from 1 to the number of standbys named (${names.length})`);
  }
  if (o.timeoutMs !== undefined && !(isInt(o.timeoutMs) && o.timeoutMs >= 10 && o.timeoutMs <= 600_000)) {
    problems.push('awaitStandby.timeoutMs must be a whole number of milliseconds from 10 to 600000');
  }
  if (o.pollIntervalMs !== undefined && !(isInt(o.pollIntervalMs) && o.pollIntervalMs >= 1 && o.pollIntervalMs <= 1_000)) {
    problems.push('awaitStandby.pollIntervalMs must be a whole number of milliseconds from 1 to 1000');
  }
  return problems;
}

function isInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value);
}
