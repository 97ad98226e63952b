import { ConfirmChannel, ChannelModel, connect } from 'amqplib';
import { Pool } from 'pg';
import { AMQP_URL, POSTGRES_URL } from '../../test/support/environment';

/** Rows one claim takes, and claims in flight at once: the library's defaults. */
const BATCH = 500;
const LOOPS = 4;
/** Pause of a loop that found nothing to claim. */
const IDLE_MS = 10;

/**
 * The dispatch a careful engineer writes by hand on the library's own PostgreSQL table, as the
 * drain's second reference: claim with one `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP
 * LOCKED)` (the library's claimable index), publish each row on a shared confirm channel, await
 * the batch's confirms, mark it DONE with one `UPDATE … WHERE id = ANY($1)`. Four loops, as the
 * library's defaults. None of what the library adds: no claim token check on settle, no retries,
 * no per-message timeout, no headers, no trace, no events; failures throw.
 */
export class HandWrittenRelay {
  private stopped = false;
  private loops: Promise<void>[] = [];

  private constructor(
    private readonly pool: Pool,
    private readonly connection: ChannelModel,
    private readonly channel: ConfirmChannel,
    private readonly table: string,
  ) {}

  /** Starts relaying from `schema`'s `outbox_message` table. */
  static async start(schema: string): Promise<HandWrittenRelay> {
    const pool = new Pool({ connectionString: POSTGRES_URL, max: LOOPS, application_name: 'bench-dispatch-relay' });
    const connection = await connect(AMQP_URL);
    const channel = await connection.createConfirmChannel();
    const relay = new HandWrittenRelay(pool, connection, channel, `"${schema}".outbox_message`);
    relay.loops = Array.from({ length: LOOPS }, () => relay.loop());
    return relay;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    try {
      await Promise.all(this.loops);
    } finally {
      await this.connection.close().catch(() => undefined);
      await this.pool.end();
    }
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const { rows } = await this.pool.query<{ id: string; message_id: string; message_type: string; exchange: string; routing_key: string; payload: string }>(
        `UPDATE ${this.table} SET status = 'PROCESSING', claimed_at = now()
         WHERE id IN (SELECT id FROM ${this.table} WHERE status IN ('PENDING', 'FAILED') AND next_attempt_at <= now()
                      ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING id, message_id, message_type, exchange, routing_key, payload::text AS payload`,
        [BATCH],
      );
      if (rows.length === 0) {
        await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
        continue;
      }
      await Promise.all(
        rows.map(
          (row) =>
            new Promise<void>((resolve, reject) =>
              this.channel.publish(
                row.exchange,
                row.routing_key,
                Buffer.from(row.payload),
                { messageId: row.message_id, type: row.message_type, contentType: 'application/json', persistent: true, mandatory: true },
                (error) => (error ? reject(error) : resolve()),
              ),
            ),
        ),
      );
      await this.pool.query(`UPDATE ${this.table} SET status = 'DONE', processed_at = now() WHERE id = ANY($1::bigint[])`, [rows.map((row) => row.id)]);
    }
  }
}
