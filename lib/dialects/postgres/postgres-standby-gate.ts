import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { StandbyGate } from '../../engine/standby-gate';
import { StandbyLagError } from '../../errors/database.errors';
import { ResolvedAwaitStandby } from '../../options/await-standby';
import { describeError } from '../../retry/error-classifier';
import { execute } from '../sql-executor';

/** A batch waiting for the standbys; `target` is unset until a read of the positions began after it came. */
interface Waiter {
  target?: bigint;
  deadline: number;
  resolve(): void;
  reject(error: Error): void;
}

/**
 * PostgreSQL's `StandbyGate`: compares the primary's WAL flush position, read after a batch was
 * claimed, with the flush positions the named standbys report in `pg_stat_replication`. The
 * primary's flush position is past the commit of every row in the batch: each was committed (and,
 * under `synchronous_commit` on, flushed) before the claim could see it. Not the insert position:
 * that also counts the dispatcher's own unflushed bookkeeping (`workerSynchronousCommit: false`),
 * which reaches standbys only at the WAL writer's next round, up to `wal_writer_delay` later.
 * Flushed on the standby, not replayed: a promoted standby replays all it has flushed before it
 * accepts writes, and a standby reports its flush position as soon as it moves, its replay
 * position only every `wal_receiver_status_interval` unless a commit asks.
 *
 * One loop of reads serves every waiting batch: each read gives their target to the batches that
 * came before it and resolves those the standbys have reached, so the database sees one statement
 * per poll interval however many batches wait, and none while none do.
 */
export class PostgresStandbyGate implements StandbyGate {
  private readonly waiters = new Set<Waiter>();
  private polling = false;
  /** Why the last read confirmed nothing, for the error when a batch gives up. */
  private lastProblem = '';

  constructor(
    private readonly dataSource: DataSource,
    private readonly settings: ResolvedAwaitStandby,
  ) {}

  replicated(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiters.add({ deadline: performance.now() + this.settings.timeoutMs, resolve, reject });
      if (!this.polling) void this.poll();
    });
  }

  private async poll(): Promise<void> {
    this.polling = true;
    try {
      while (this.waiters.size > 0) {
        // Only batches that came before this read began: their rows committed before it.
        const arrived = [...this.waiters].filter((waiter) => waiter.target === undefined);
        try {
          const { flushedHere, flushedTo } = await this.positions();
          for (const waiter of arrived) waiter.target = flushedHere;
          this.release(flushedTo);
        } catch (error) {
          this.lastProblem = `the primary's position could not be read: ${describeError(error, 300)}`;
        }
        this.expire();
        if (this.waiters.size > 0) await sleep(this.settings.pollIntervalMs);
      }
    } finally {
      this.polling = false;
    }
  }

  /** The primary's WAL flush position and each named standby's (null where the role may not see it). */
  private async positions(): Promise<{ flushedHere: bigint; flushedTo: (bigint | null)[] }> {
    const result = await execute(
      this.dataSource,
      `SELECT pg_current_wal_flush_lsn()::text AS flushed_here,
              ARRAY(SELECT coalesce(flush_lsn::text, '') FROM pg_stat_replication WHERE application_name = ANY($1)) AS flushed`,
      [this.settings.standbys],
    );
    const row = result.records[0] as { flushed_here: string; flushed: string[] };
    return { flushedHere: parseLsn(row.flushed_here), flushedTo: row.flushed.map((lsn) => (lsn ? parseLsn(lsn) : null)) };
  }

  private release(flushedTo: (bigint | null)[]): void {
    const { confirmations, standbys } = this.settings;
    const known = flushedTo.filter((lsn): lsn is bigint => lsn !== null);
    if (flushedTo.length === 0) this.lastProblem = `pg_stat_replication lists none of ${standbys.join(', ')}: not connected`;
    else if (known.length < flushedTo.length) {
      this.lastProblem = "pg_stat_replication hides the standbys' positions from this database role: grant it pg_read_all_stats (or pg_monitor)";
    } else this.lastProblem = `fewer than ${confirmations} of ${standbys.join(', ')} have flushed the rows yet`;
    for (const waiter of this.waiters) {
      if (waiter.target === undefined) continue;
      const holding = known.filter((lsn) => lsn >= waiter.target!).length;
      if (holding >= confirmations) {
        this.waiters.delete(waiter);
        waiter.resolve();
      }
    }
  }

  private expire(): void {
    const now = performance.now();
    for (const waiter of this.waiters) {
      if (waiter.deadline > now) continue;
      this.waiters.delete(waiter);
      waiter.reject(
        new StandbyLagError(
          `no ${this.settings.confirmations} of the standbys ${this.settings.standbys.join(', ')} confirmed the batch within ${this.settings.timeoutMs} ms ` +
            `(${this.lastProblem}); it is claimed again at the next poll (awaitStandby)`,
        ),
      );
    }
  }
}

/** A `pg_lsn` text (`16/B374D848`) as a number that orders as the WAL does. */
export function parseLsn(text: string): bigint {
  const [high, low] = text.split('/');
  return (BigInt(`0x${high}`) << 32n) | BigInt(`0x${low}`);
}
