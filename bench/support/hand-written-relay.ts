import { ConfirmChannel, ChannelModel, connect } from 'amqplib';
import { Pool } from 'pg';
import { AMQP_URL, POSTGRES_URL } from '../../test/support/environment';

/** Rows one claim takes, and claims in flight at once: the library's defaults. */
const BATCH = 500;
const LOOPS = 4;
/** Pause of a loop that found nothing to claim. */
const IDLE_MS = 10;

/**
 * Where a claim is written: in the row (`status = 'PROCESSING'`, as the library does), or as a row
 * of a claims table of the relay's own, the outbox row untouched until its settle marks it DONE.
 */
export type RelayClaims = 'in-row' | 'claims-table';

/** A claimed row, as the relay publishes it. */
interface RelayRow {
  id: string;
  message_id: string;
  message_type: string;
  exchange: string;
  routing_key: string;
  payload: string;
}

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
    private readonly claims: RelayClaims,
    private readonly claimsTable: string,
  ) {}

  /** Starts relaying from `schema`'s `outbox_message` table. */
  static async start(schema: string, claims: RelayClaims = 'in-row'): Promise<HandWrittenRelay> {
    const pool = new Pool({ connectionString: POSTGRES_URL, max: LOOPS, application_name: 'bench-dispatch-relay' });
    const claimsTable = `"${schema}".outbox_relay_claims`;
    if (claims === 'claims-table') {
      await pool.query(`DROP TABLE IF EXISTS ${claimsTable}`);
      await pool.query(`CREATE TABLE ${claimsTable} (id bigint PRIMARY KEY, claimed_at timestamptz NOT NULL)`);
    }
    const connection = await connect(AMQP_URL);
    const channel = await connection.createConfirmChannel();
    const relay = new HandWrittenRelay(pool, connection, channel, `"${schema}".outbox_message`, claims, claimsTable);
    relay.loops = Array.from({ length: LOOPS }, () => relay.loop());
    return relay;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    try {
      await Promise.all(this.loops);
    } finally {
      await this.connection.close().catch(() => undefined);
      if (this.claims === 'claims-table') await this.pool.query(`DROP TABLE IF EXISTS ${this.claimsTable}`).catch(() => undefined);
      await this.pool.end();
    }
  }

  /** Claims up to a batch: the rows become PROCESSING, or get a row each in the claims table. */
  private async claim(): Promise<RelayRow[]> {
    if (this.claims === 'in-row') {
      const { rows } = await this.pool.query<RelayRow>(
        `UPDATE ${this.table} SET status = 'PROCESSING', claimed_at = now()
         WHERE id IN (SELECT id FROM ${this.table} WHERE status IN ('PENDING', 'FAILED') AND next_attempt_at <= now()
                      ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING id, message_id, message_type, exchange, routing_key, payload::text AS payload`,
        [BATCH],
      );
      return rows;
    }
    // The rows are locked while chosen; a claim another loop committed meanwhile is a key conflict.
    const { rows } = await this.pool.query<RelayRow>(
      `WITH chosen AS MATERIALIZED (
         SELECT c.id FROM ${this.table} AS c
         WHERE c.status IN ('PENDING', 'FAILED') AND c.next_attempt_at <= now()
           AND NOT EXISTS (SELECT 1 FROM ${this.claimsTable} AS k WHERE k.id = c.id)
         ORDER BY c.id LIMIT $1 FOR UPDATE OF c SKIP LOCKED),
       taken AS (INSERT INTO ${this.claimsTable} (id, claimed_at) SELECT id, now() FROM chosen ON CONFLICT DO NOTHING RETURNING id)
       SELECT t.id, message_id, message_type, exchange, routing_key, payload::text AS payload
       FROM ${this.table} AS t JOIN taken USING (id)`,
      [BATCH],
    );
    return rows;
  }

  /** Marks the batch DONE (and ends its claims). */
  private async settle(ids: string[]): Promise<void> {
    if (this.claims === 'in-row') {
      await this.pool.query(`UPDATE ${this.table} SET status = 'DONE', processed_at = now() WHERE id = ANY($1::bigint[])`, [ids]);
      return;
    }
    // The rows first, then their claims: a loop whose claim chose a row before this batch's claim
    // committed may hold it locked; this waits for that loop, which never waits on a claim being deleted.
    await this.pool.query(
      // The claim's time goes into the row, as an in-row claim leaves it (the bench reads it).
      `WITH done AS (
         UPDATE ${this.table} AS t SET status = 'DONE', processed_at = now(), claimed_at = k.claimed_at
         FROM ${this.claimsTable} AS k WHERE k.id = t.id AND t.id = ANY($1::bigint[]) RETURNING t.id)
       DELETE FROM ${this.claimsTable} WHERE id IN (SELECT id FROM done)`,
      [ids],
    );
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const rows = await this.claim();
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
      await this.settle(rows.map((row) => row.id));
    }
  }
}
