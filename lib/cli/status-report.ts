import { InboxStats, OutboxTableStats, TableStats } from '../admin/outbox-stats';
import { MessageStatus } from '../message/message-status';
import { formatDuration, formatInstant } from './cli-format';
import { printTable, PrintedColumn } from './table-printer';
import { TableSchema } from './table-schema-state';

const STATUSES = Object.values(MessageStatus);

/** What `status` found, as `--json` prints it. */
export interface StatusReport {
  /** The dialect the DataSource resolved to, e.g. `postgres`, `mariadb 11.4.2 (SKIP LOCKED)`. */
  database: string;
  /**
   * Both tables are there and usable (the outbox at the latest schema version, or at one the
   * library works with and `migrate` upgrades): the exit code is 0.
   */
  ready: boolean;
  outbox: TableStatus & {
    schemaVersion: number | 'missing' | 'unrecognised';
    latestSchemaVersion: number;
    /** What upgrading to the latest version brings, when the table is behind or upgradable; null otherwise. */
    upgrade: string | null;
    stats: OutboxTableStats | null;
  };
  inbox: TableStatus & { stats: InboxStats | null };
  /** The database's clock when the outbox (else the inbox) was counted; null when neither was. */
  at: Date | null;
  /**
   * What to run to make the tables ready, or when they are but the outbox is `upgradable`, to
   * upgrade it; null when there is nothing to run, or when a table needs a person.
   */
  next: string | null;
}

/** A table's schema in the report. */
export interface TableStatus {
  table: string;
  state: TableSchema['state'];
  problem: string | null;
}

/** `status`'s report as text: each table's schema, then its counts per transport or consumer. */
export function printStatusReport(report: StatusReport): string {
  const lines = [
    `Database: ${report.database}`,
    `Outbox table ${report.outbox.table}: ${outboxSchemaLine(report)}`,
    `Inbox table ${report.inbox.table}: ${inboxSchemaLine(report)}`,
  ];
  let text = `${lines.join('\n')}\n`;
  const { outbox, inbox } = report;
  if (outbox.stats) text += `\n${countsTable('TRANSPORT', outbox.stats.byTransport, outbox.stats)}`;
  if (inbox.stats) text += `\n${countsTable('CONSUMER', inbox.stats.byConsumer, inbox.stats)}`;
  if (report.at) text += `\nCounted at ${formatInstant(report.at)} by the database's clock; lag is how long the oldest due row has waited.\n`;
  if (!report.ready) {
    const problems = [outbox.problem, inbox.problem].filter((problem): problem is string => problem !== null);
    text += `\nNot ready: ${problems.join('; ')}.\n`;
  }
  if (report.next) text += `${report.ready ? '\n' : ''}Next: ${report.next}\n`;
  return text;
}

function outboxSchemaLine({ outbox }: StatusReport): string {
  switch (outbox.state) {
    case 'current':
      return `schema version ${outbox.schemaVersion} (current)`;
    case 'upgradable':
      return `schema version ${outbox.schemaVersion} (works; the latest is ${outbox.latestSchemaVersion}: ${outbox.upgrade})`;
    case 'behind':
      return `schema version ${outbox.schemaVersion} (behind: the latest is ${outbox.latestSchemaVersion})`;
    case 'missing':
      return 'missing';
    case 'unrecognised':
      return 'not an outbox table';
  }
}

function inboxSchemaLine({ inbox }: StatusReport): string {
  return inbox.state === 'current' ? 'present' : inbox.state === 'missing' ? 'missing' : 'not an inbox table';
}

/** One row per transport or consumer, then the table's total. */
function countsTable(scope: string, byScope: Record<string, TableStats>, total: TableStats): string {
  const columns: PrintedColumn[] = [
    { header: scope },
    ...STATUSES.map((status): PrintedColumn => ({ header: status, align: 'right' })),
    { header: 'DUE', align: 'right' },
    { header: 'LAG', align: 'right' },
    { header: 'IN FLIGHT', align: 'right' },
  ];
  const row = (name: string, stats: TableStats) => [
    name,
    ...STATUSES.map((status) => String(stats.counts[status])),
    String(stats.due),
    stats.due > 0 ? formatDuration(stats.lagMs) : '-',
    String(stats.inFlight),
  ];
  return printTable(columns, [...Object.entries(byScope).map(([name, stats]) => row(name, stats)), row('(total)', total)]);
}
