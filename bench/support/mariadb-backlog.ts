import { Connection, createConnection } from 'mysql2/promise';
import type { MysqlTestDatabase } from '../../test/support/databases/mysql-test-database';
import { BENCH_BODY } from './broker';
import type { DrainOutcome, OutboxBacklog } from './outbox-backlog';

/**
 * The outbox table of a MariaDB database, seeded from the server's SEQUENCE engine
 * (`seq_1_to_<n>`). MariaDB has no NOTIFY: dispatchers find the backlog by their periodic look
 * (`wakeupProbeIntervalMs`).
 */
export class MariadbBacklog implements OutboxBacklog {
  readonly wakeup = 'look';
  /** The database clock just before the last seed's COMMIT (UTC DATETIME(6) text). */
  private seededAt = '';

  private constructor(
    private readonly db: Connection,
    private readonly table: string,
  ) {}

  static async open(database: MysqlTestDatabase): Promise<MariadbBacklog> {
    const db = await createConnection({ ...database.server, database: database.name, timezone: 'Z' });
    return new MariadbBacklog(db, `\`${database.name}\`.outbox_message`);
  }

  async clear(): Promise<void> {
    await this.db.query(`TRUNCATE TABLE ${this.table}`);
  }

  async seed(exchange: string, count: number): Promise<number> {
    if (!Number.isInteger(count) || count < 1) throw new Error(`a backlog needs a positive whole number of rows, not ${count}`);
    await this.db.query('BEGIN');
    // The columns and times the MySQL dialect's insert writes, with what publish() would put there.
    await this.db.query(
      `INSERT INTO ${this.table}
         (message_id, message_type, biz_key, ordering_key, exchange, routing_key, destination, payload, headers, status, max_attempts, next_attempt_at, created_at)
       SELECT UUID(), 'bench.dispatched', CONCAT('bench-', seq), NULL, ?, 'bench.dispatched', ?,
              JSON_OBJECT('n', seq, 'blob', ?), '{}', 'PENDING', 10, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6)
       FROM seq_1_to_${count}`,
      [exchange, exchange, BENCH_BODY.blob],
    );
    const [rows] = await this.db.query(`SELECT DATE_FORMAT(UTC_TIMESTAMP(6), '%Y-%m-%d %H:%i:%s.%f') AS at`);
    this.seededAt = (rows as { at: string }[])[0].at;
    const started = performance.now();
    await this.db.query('COMMIT');
    return started;
  }

  async busy(): Promise<boolean> {
    // Both probes walk an index that leads with status (the claim and processing indexes).
    const [rows] = await this.db.query(
      `SELECT EXISTS (SELECT 1 FROM ${this.table} WHERE status IN ('PENDING', 'FAILED'))
           OR EXISTS (SELECT 1 FROM ${this.table} WHERE status = 'PROCESSING') AS busy`,
    );
    return Number((rows as { busy: unknown }[])[0].busy) === 1;
  }

  async outcome(): Promise<DrainOutcome> {
    const [rows] = await this.db.query(
      `SELECT SUM(status = 'DONE') AS done, COUNT(*) AS total, TIMESTAMPDIFF(MICROSECOND, ?, MIN(claimed_at)) / 1000 AS first_claim_ms
       FROM ${this.table}`,
      [this.seededAt],
    );
    const row = (rows as { done: unknown; total: unknown; first_claim_ms: unknown }[])[0];
    return { done: Number(row.done), total: Number(row.total), firstClaimMs: Number(row.first_claim_ms) };
  }

  async close(): Promise<void> {
    await this.db.end();
  }
}
