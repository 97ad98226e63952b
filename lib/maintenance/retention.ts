import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { InboxDialect } from '../dialects/inbox-dialect';
import { OutboxDialect } from '../dialects/outbox-dialect';
import { archiveTableName } from '../naming/index-names';
import { qualifiedTable } from '../dialects/resolve-dialect';
import { ArchiveTable, StateTable } from '../engine/state-table';
import { INBOX_DIALECT, OUTBOX_WORKER_DATA_SOURCE, OUTBOX_DIALECT, OUTBOX_OPTIONS, OUTBOX_TABLE_NAMES } from '../naming/injection-tokens';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { TableNames } from '../naming/table-names';
import { TABLE_COLUMNS } from '../schema/table-columns';
import { describeError } from '../retry/error-classifier';
import { OutboxIdentity } from '../naming/outbox-identity';

const RETENTION_INTERVAL_NAME = 'nestjs-outbox:retention';

/**
 * Deletes DONE and ABANDONED rows older than `retentionMs` from the outbox and inbox, or with
 * `retentionMode: 'archive'` moves them to each table's archive, in batches of
 * `retentionBatchSize` (never one unbounded statement); rows in flight, failed or waiting for an
 * operator are never touched. The inbox's dedupe window is `retentionMs`, archived or not.
 */
@Injectable()
export class Retention implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private namedLogger?: Logger;
  /** Each table, and its archive in archive mode. */
  private readonly tables: { table: StateTable; archive?: ArchiveTable }[];
  private running?: Promise<Record<string, number>>;
  /** Which outbox this is: its interval's name and log context carry a named outbox's name. */
  @Inject(OutboxIdentity) private readonly identity!: OutboxIdentity;

  /** Made on first use: the identity is injected after construction. */
  private get logger(): Logger {
    return (this.namedLogger ??= new Logger(this.identity.logContext(Retention.name)));
  }

  /**
   * Nest creates it: inject it rather than constructing it.
   * @internal
   */
  constructor(
    @Inject(OUTBOX_WORKER_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(OUTBOX_DIALECT) outbox: OutboxDialect,
    @Inject(INBOX_DIALECT) inbox: InboxDialect,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    @Inject(OUTBOX_TABLE_NAMES) names: TableNames,
    @Optional() private readonly scheduler?: SchedulerRegistry,
  ) {
    const archive = (name: string, columns: readonly string[]): ArchiveTable | undefined =>
      options.retentionMode === 'archive' ? { quoted: qualifiedTable(dataSource, archiveTableName(name)), columns } : undefined;
    this.tables = [
      { table: outbox, archive: archive(names.outbox, TABLE_COLUMNS.outbox) },
      { table: inbox, archive: archive(names.inbox, TABLE_COLUMNS.inbox) },
    ];
  }

  /** Nest lifecycle hook: schedules the purge every `retentionIntervalMs` where `dispatcherEnabled` and `retentionMs` > 0. */
  onApplicationBootstrap(): void {
    if (!this.options.dispatcherEnabled || !this.scheduler || this.options.retentionMs === 0) return;
    const timer = setInterval(
      () => void this.purge().catch((error) => this.logger.error(`Retention failed: ${describeError(error, 500)}`)),
      this.options.retentionIntervalMs,
    );
    this.scheduler.addInterval(this.identity.scheduleName(RETENTION_INTERVAL_NAME), timer);
  }

  /** Nest lifecycle hook: stops the scheduled purge. */
  beforeApplicationShutdown(): void {
    const interval = this.identity.scheduleName(RETENTION_INTERVAL_NAME);
    if (this.scheduler?.doesExist('interval', interval)) this.scheduler.deleteInterval(interval);
  }

  /** Deletes (or archives) old finished rows now, one purge at a time; returns how many per table. */
  purge(olderThanMs: number = this.options.retentionMs): Promise<Record<string, number>> {
    this.running ??= this.purgeTables(olderThanMs).finally(() => (this.running = undefined));
    return this.running;
  }

  private async purgeTables(olderThanMs: number): Promise<Record<string, number>> {
    const removed: Record<string, number> = {};
    const size = this.options.retentionBatchSize;
    for (const { table, archive } of this.tables) {
      removed[table.label] = 0;
      for (;;) {
        const count = archive
          ? await table.archiveFinished(this.dataSource, archive, olderThanMs, size)
          : await table.deleteFinished(this.dataSource, olderThanMs, size);
        removed[table.label] += count;
        if (count < size) break;
      }
      if (removed[table.label] === 0) continue;
      if (archive) this.logger.log(`Archived ${removed[table.label]} finished ${table.label} row(s) to ${archive.quoted}`);
      else this.logger.log(`Deleted ${removed[table.label]} finished ${table.label} row(s)`);
    }
    return removed;
  }
}
