import { Logger } from '@nestjs/common';
import type { Attributes, BatchObservableResult } from '@opentelemetry/api';
import { OutboxAdmin } from '../admin/outbox-admin.service';
import { TableStats } from '../admin/outbox-stats';
import { ParkedKey } from '../engine/message-views';
import { InboxConsumers } from '../inbox/inbox-consumers';
import { describeError } from '../retry/error-classifier';
import { OutboxTransports } from '../transport/outbox-transports';
import { CONSUMER, STATUS, TABLE, TRANSPORT } from '../observability/metric-names';
import type { Instruments } from '../observability/metric-instruments';

/**
 * The most parked keys one collection counts per table: the gauge reads them through
 * `OutboxAdmin.parkedKeys()`, a list, and an alert needs "some", not an exact census.
 */
const PARKED_KEYS_COUNTED = 10_000;

/**
 * The gauges read from the tables when the SDK collects: rows by status and lag from one
 * `OutboxAdmin.stats()` snapshot, and the parked ordering keys, per transport and per consumer.
 */
export class TableGauges {
  constructor(
    private readonly instruments: Pick<Instruments, 'rows' | 'lag' | 'parkedKeys'>,
    private readonly admin: OutboxAdmin,
    private readonly transports: OutboxTransports,
    private readonly consumers: InboxConsumers,
    private readonly outboxAttributes: Attributes,
    private readonly logger: Logger,
  ) {}

  /** The tables' rows by status and their lag, per transport and per consumer, from one stats() snapshot. */
  async observe(result: BatchObservableResult): Promise<void> {
    let stats;
    try {
      stats = await this.admin.stats();
    } catch (error) {
      // A collection without these figures, rather than a failed export of every other metric.
      this.logger.warn(`Reading the outbox stats for metrics failed: ${describeError(error, 300)}`);
      return;
    }
    const observe = (table: 'outbox' | 'inbox', attributes: Attributes, figures: TableStats) => {
      for (const [status, count] of Object.entries(figures.counts))
        result.observe(this.instruments.rows, count, { [TABLE]: table, [STATUS]: status, ...attributes, ...this.outboxAttributes });
      result.observe(this.instruments.lag, figures.lagMs / 1_000, { [TABLE]: table, ...attributes, ...this.outboxAttributes });
    };
    for (const [transport, figures] of Object.entries(stats.outbox.byTransport)) observe('outbox', { [TRANSPORT]: transport }, figures);
    for (const [consumer, figures] of Object.entries(stats.inbox.byConsumer)) observe('inbox', { [CONSUMER]: consumer }, figures);
    await this.observeParkedKeys(result, Object.keys(stats.outbox.byTransport), Object.keys(stats.inbox.byConsumer));
  }

  /**
   * Parked keys per transport and per consumer: 0 for every one known (configured, or with rows),
   * so that an alert on `> 0` has a series to watch before the first key parks.
   */
  private async observeParkedKeys(result: BatchObservableResult, transportsWithRows: string[], consumersWithRows: string[]): Promise<void> {
    let outbox: ParkedKey[];
    let inbox: ParkedKey[];
    try {
      [outbox, inbox] = await Promise.all([this.admin.parkedKeys(PARKED_KEYS_COUNTED), this.admin.parkedInboxKeys(PARKED_KEYS_COUNTED)]);
    } catch (error) {
      this.logger.warn(`Reading the parked keys for metrics failed: ${describeError(error, 300)}`);
      return;
    }
    const count = (keys: ParkedKey[], names: Iterable<string>, nameOf: (key: ParkedKey) => string | null) => {
      const counts = new Map<string, number>();
      for (const name of names) counts.set(name, 0);
      for (const key of keys) {
        const name = nameOf(key) ?? '';
        counts.set(name, (counts.get(name) ?? 0) + 1);
      }
      return counts;
    };
    for (const [transport, parked] of count(outbox, [...this.transports.names(), ...transportsWithRows], (key) => key.transport))
      result.observe(this.instruments.parkedKeys, parked, { [TABLE]: 'outbox', [TRANSPORT]: transport, ...this.outboxAttributes });
    for (const [consumer, parked] of count(inbox, [...this.consumers.all, ...consumersWithRows], (key) => key.consumer))
      result.observe(this.instruments.parkedKeys, parked, { [TABLE]: 'inbox', [CONSUMER]: consumer, ...this.outboxAttributes });
  }
}
