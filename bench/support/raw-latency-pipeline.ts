import { ConfirmChannel, connect } from 'amqplib';
import { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import { AMQP_URL, POSTGRES_URL } from '../../test/support/environment';
import { BENCH_BODY_TEXT } from './broker';
import type { Publish } from './open-loop-latency';

/** The hand-written pipeline's publishing transaction and its lifecycle. */
export interface RawLatencyPipeline {
  /** Creates its table, `raw_outbox`, as a copy of the library's `outbox_message` in the same schema. */
  createTable(): Promise<void>;
  publish: Publish;
  /**
   * The same, with the INSERT in a TypeORM transaction of `dataSource` (as an application on
   * TypeORM writes it) instead of a raw `pg` one: what TypeORM costs alone.
   */
  publishThrough(dataSource: DataSource): Publish;
  close(): Promise<void>;
}

/**
 * The latency benches' baseline: INSERT in a transaction of its own, publish to `exchange` on a
 * confirm channel right after COMMIT, and mark confirmed rows DONE in batches (as a dispatcher
 * would settle).
 */
export async function startRawPipeline(schema: string, exchange: string): Promise<RawLatencyPipeline> {
  const table = `"${schema}".raw_outbox`;
  const pool = new Pool({ connectionString: POSTGRES_URL, max: 10, application_name: 'bench-latency-raw' });
  const connection = await connect(AMQP_URL);
  const channel: ConfirmChannel = await connection.createConfirmChannel();
  const body = Buffer.from(BENCH_BODY_TEXT);
  let confirmed: string[] = [];
  const settler = setInterval(() => {
    if (confirmed.length === 0) return;
    const ids = confirmed;
    confirmed = [];
    void pool.query(`UPDATE ${table} SET status = 'DONE', processed_at = now() WHERE id = ANY($1::bigint[])`, [ids]).catch(() => undefined);
  }, 10);
  const insertSql = `INSERT INTO ${table} (message_id, message_type, biz_key, exchange, routing_key, payload, headers, status, max_attempts)
     VALUES ($1, 'bench.latency', NULL, $2, 'bench.latency', $3, '{}', 'PENDING', 10) RETURNING id`;
  // Not awaited: the caller stamps COMMIT now; the confirm arrives later.
  const sendAfterCommit = (messageId: string, id: string) =>
    channel.publish(
      exchange,
      'bench.latency',
      body,
      { messageId, type: 'bench.latency', contentType: 'application/json', persistent: true, mandatory: true, headers: {} },
      (error) => {
        if (!error) confirmed.push(id);
      },
    );
  return {
    async createTable() {
      await pool.query(`CREATE TABLE ${table} (LIKE "${schema}".outbox_message INCLUDING ALL)`);
    },
    async publish(messageId: string): Promise<void> {
      const client = await pool.connect();
      let id: string;
      try {
        await client.query('BEGIN');
        const { rows } = await client.query(insertSql, [messageId, exchange, BENCH_BODY_TEXT]);
        id = rows[0].id;
        await client.query('COMMIT');
      } finally {
        client.release();
      }
      sendAfterCommit(messageId, id);
    },
    publishThrough(dataSource: DataSource): Publish {
      return async (messageId) => {
        const rows: { id: string }[] = await dataSource.transaction((manager) => manager.query(insertSql, [messageId, exchange, BENCH_BODY_TEXT]));
        sendAfterCommit(messageId, rows[0].id);
      };
    },
    async close() {
      clearInterval(settler);
      await connection.close().catch(() => undefined);
      await pool.end();
    },
  };
}
