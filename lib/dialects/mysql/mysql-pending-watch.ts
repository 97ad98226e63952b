import { DataSource } from 'typeorm';
import { MessageStatus } from '../../message/message-status';
import { execute } from '../sql-executor';
import { outboxIndexNames } from '../../naming/index-names';
import { forceIndex, MysqlTable } from './mysql-sql';

/** The longest `stop()` waits for a look in progress. */
const STOP_WAIT_MS = 2_000;

/**
 * MySQL and MariaDB have no NOTIFY: instead, another instance's commit is seen by reading, every
 * `intervalMs`, the newest PENDING id of each transport through the lane index — an index-only
 * loose scan, one row per transport, whatever the retained history or the backlog. A change of
 * that list means rows were committed (or claimed) since the last look, so the dispatchers are
 * woken. Nothing is written: the publishing transaction pays nothing.
 *
 * Transactional by construction: each probe is an autocommit consistent read, which sees only
 * committed rows, so a wake-up never runs ahead of the rows it announces. A row committed late
 * with a lower id than one already seen still changes the list (the newest PENDING id moves once
 * the higher one is claimed), and anything this misses is found by the poll, the backstop.
 */
export class MysqlPendingWatch {
  private timer?: NodeJS.Timeout;
  private probing?: Promise<void>;
  private last?: string;
  private stopped = false;

  private constructor(
    private readonly dataSource: DataSource,
    private readonly sql: string,
    private readonly intervalMs: number,
    private readonly onChange: () => void,
    private readonly onError: (error: Error) => void,
  ) {}

  /**
   * Takes a first look (a failure rejects, as a failed LISTEN does), then looks every `intervalMs`
   * until stopped or until a look fails, which is reported through `onError` and ends the watch.
   */
  static async start(
    dataSource: DataSource,
    table: MysqlTable,
    intervalMs: number,
    onChange: () => void,
    onError: (error: Error) => void,
  ): Promise<MysqlPendingWatch> {
    const watch = new MysqlPendingWatch(dataSource, newestPendingSql(table), intervalMs, onChange, onError);
    watch.last = await watch.read();
    watch.schedule();
    return watch;
  }

  /**
   * Stops looking; resolves once a look in progress is over, so its connection is back in the
   * pool, or after STOP_WAIT_MS where the server does not answer: shutdown never hangs on a look.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    if (!this.probing) return;
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([this.probing, new Promise<void>((resolve) => (bound = setTimeout(resolve, STOP_WAIT_MS)))]);
    clearTimeout(bound);
  }

  private schedule(): void {
    if (this.stopped) return;
    // One look at a time: the next is timed from the end of the last, so a slow server is not queued up.
    this.timer = setTimeout(() => {
      this.probing = this.probe().finally(() => (this.probing = undefined));
    }, this.intervalMs);
    this.timer.unref();
  }

  private async probe(): Promise<void> {
    let seen: string;
    try {
      seen = await this.read();
    } catch (error) {
      if (!this.stopped) this.onError(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    if (this.stopped) return;
    const changed = seen !== this.last;
    this.last = seen;
    if (changed) this.onChange();
    this.schedule();
  }

  private async read(): Promise<string> {
    const { records } = await execute(this.dataSource, this.sql);
    return records
      .map((r) => `${String(r.transport)}:${String(r.id)}`)
      .sort()
      .join(',');
  }
}

/**
 * The newest PENDING id of each transport. The GROUP BY names the lane index's leading columns in
 * its order, which is what lets the server jump from one transport to the next (a loose scan):
 * `(status, transport, id, …)` at version 4, `(transport, status, id, …)` before. Grouped by the
 * transport alone, version 4's index would be read over every PENDING row.
 */
export function newestPendingSql(table: MysqlTable): string {
  const groupBy = table.outboxVersion4 ? 'status, transport' : 'transport';
  return `SELECT transport, CAST(MAX(id) AS CHAR) AS id FROM ${table.quoted} ${forceIndex(outboxIndexNames(table.name).lane)}
                 WHERE status = '${MessageStatus.PENDING}' GROUP BY ${groupBy}`;
}
