import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { InboxDialect } from '../dialects/inbox-dialect';
import { OutboxDialect } from '../dialects/outbox-dialect';
import { StateTable } from '../engine/state-table';
import { INBOX_DIALECT, OUTBOX_WORKER_DATA_SOURCE, OUTBOX_DIALECT, OUTBOX_OPTIONS } from '../outbox.constants';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { describeError } from '../retry/error-classifier';

const RETENTION_INTERVAL_NAME = 'nestjs-outbox:retention';

/**
 * Deletes DONE and ABANDONED rows older than `retentionMs` from the outbox and inbox, in
 * batches of `retentionBatchSize` (never one unbounded DELETE); rows in flight, failed or
 * waiting for an operator are never touched. The inbox's dedupe window is `retentionMs`.
 */
@Injectable()
export class Retention implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(Retention.name);
  private readonly tables: StateTable[];
  private running?: Promise<Record<string, number>>;

  constructor(
    @Inject(OUTBOX_WORKER_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(OUTBOX_DIALECT) outbox: OutboxDialect,
    @Inject(INBOX_DIALECT) inbox: InboxDialect,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    @Optional() private readonly scheduler?: SchedulerRegistry,
  ) {
    this.tables = [outbox, inbox];
  }

  onApplicationBootstrap(): void {
    if (!this.options.dispatcherEnabled || !this.scheduler || this.options.retentionMs === 0) return;
    const timer = setInterval(
      () => void this.purge().catch((error) => this.logger.error(`Retention failed: ${describeError(error, 500)}`)),
      this.options.retentionIntervalMs,
    );
    this.scheduler.addInterval(RETENTION_INTERVAL_NAME, timer);
  }

  beforeApplicationShutdown(): void {
    if (this.scheduler?.doesExist('interval', RETENTION_INTERVAL_NAME)) this.scheduler.deleteInterval(RETENTION_INTERVAL_NAME);
  }

  /** Deletes old finished rows now (one purge at a time); returns how many per table. */
  purge(olderThanMs: number = this.options.retentionMs): Promise<Record<string, number>> {
    this.running ??= this.purgeTables(olderThanMs).finally(() => (this.running = undefined));
    return this.running;
  }

  private async purgeTables(olderThanMs: number): Promise<Record<string, number>> {
    const deleted: Record<string, number> = {};
    for (const table of this.tables) {
      deleted[table.label] = 0;
      for (;;) {
        const count = await table.deleteFinished(this.dataSource, olderThanMs, this.options.retentionBatchSize);
        deleted[table.label] += count;
        if (count < this.options.retentionBatchSize) break;
      }
      if (deleted[table.label] > 0) this.logger.log(`Deleted ${deleted[table.label]} finished ${table.label} row(s)`);
    }
    return deleted;
  }
}
