import { createPool, Pool as MysqlPool, RowDataPacket } from 'mysql2/promise';
import { Pool as PgPool } from 'pg';
import type { TestDatabase } from '../../test/support/database';
import type { MysqlTestDatabase } from '../../test/support/databases/mysql-test-database';
import { POSTGRES_URL } from '../../test/support/environment';

/**
 * Where a PostgreSQL relay writes a claim: in the row (`status = 'PROCESSING'`, as the library
 * does), or as a row of a claims table of its own, the outbox row untouched until its settle marks
 * it DONE.
 */
export type RelayClaims = 'in-row' | 'claims-table';

/** A claimed row, as the relay publishes it. */
export interface RelayRow {
  id: string;
  message_id: string;
  message_type: string;
  exchange: string;
  routing_key: string;
  payload: string;
}

/** A relay's claims and settles on one database's outbox table, one connection per loop. */
export interface RelayStore {
  /** Claims up to `limit` due rows, oldest first. */
  claim(limit: number): Promise<RelayRow[]>;
  /** Marks the rows DONE. */
  settle(ids: string[]): Promise<void>;
  close(): Promise<void>;
}

/** The store for `database`'s `outbox_message` table, with `connections` pooled connections. */
export async function openRelayStore(database: TestDatabase, connections: number, claims: RelayClaims): Promise<RelayStore> {
  if (database.kind === 'postgres') return PostgresRelayStore.open(database.name, connections, claims);
  if (claims !== 'in-row') throw new Error(`a relay with a claims table runs on PostgreSQL only, not on ${database.kind}`);
  if (database.kind === 'mariadb' || database.kind === 'mysql') return MysqlRelayStore.open(database as MysqlTestDatabase, connections);
  throw new Error(`no hand-written relay for ${database.kind}`);
}

/**
 * PostgreSQL: a claim is one `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED) RETURNING`
 * (the library's claimable index), a settle one `UPDATE … WHERE id = ANY($1)`; or the same with
 * a claims table (see `RelayClaims`).
 */
class PostgresRelayStore implements RelayStore {
  private constructor(
    private readonly pool: PgPool,
    private readonly table: string,
    private readonly claims: RelayClaims,
    private readonly claimsTable: string,
  ) {}

  static async open(schema: string, connections: number, claims: RelayClaims): Promise<PostgresRelayStore> {
    const pool = new PgPool({ connectionString: POSTGRES_URL, max: connections, application_name: 'bench-dispatch-relay' });
    const claimsTable = `"${schema}".outbox_relay_claims`;
    if (claims === 'claims-table') {
      await pool.query(`DROP TABLE IF EXISTS ${claimsTable}`);
      await pool.query(`CREATE TABLE ${claimsTable} (id bigint PRIMARY KEY, claimed_at timestamptz NOT NULL)`);
    }
    return new PostgresRelayStore(pool, `"${schema}".outbox_message`, claims, claimsTable);
  }

  async claim(limit: number): Promise<RelayRow[]> {
    if (this.claims === 'in-row') {
      const { rows } = await this.pool.query<RelayRow>(
        `UPDATE ${this.table} SET status = 'PROCESSING', claimed_at = now()
         WHERE id IN (SELECT id FROM ${this.table} WHERE status IN ('PENDING', 'FAILED') AND next_attempt_at <= now()
                      ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING id, message_id, message_type, exchange, routing_key, payload::text AS payload`,
        [limit],
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
      [limit],
    );
    return rows;
  }

  async settle(ids: string[]): Promise<void> {
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

  async close(): Promise<void> {
    if (this.claims === 'claims-table') await this.pool.query(`DROP TABLE IF EXISTS ${this.claimsTable}`).catch(() => undefined);
    await this.pool.end();
  }
}

/**
 * MariaDB and MySQL, which have no `UPDATE … RETURNING`: a claim is one READ COMMITTED
 * transaction that locks the oldest PENDING rows (`SELECT … FOR UPDATE SKIP LOCKED` through the
 * lane index), marks them PROCESSING and reads them back; a settle one `UPDATE … WHERE id IN`.
 * PENDING only: the relay never retries, so no row is ever FAILED.
 */
class MysqlRelayStore implements RelayStore {
  private constructor(
    private readonly pool: MysqlPool,
    private readonly table: string,
  ) {}

  static async open(database: MysqlTestDatabase, connections: number): Promise<MysqlRelayStore> {
    const pool = createPool({
      ...database.server,
      database: database.name,
      timezone: 'Z',
      connectionLimit: connections,
      supportBigNumbers: true,
      bigNumberStrings: true,
    });
    // Without gap locks, which would stall the other loops' scans.
    pool.on('connection', (connection) => connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED'));
    return new MysqlRelayStore(pool, `\`${database.name}\`.outbox_message`);
  }

  async claim(limit: number): Promise<RelayRow[]> {
    const connection = await this.pool.getConnection();
    try {
      await connection.beginTransaction();
      const [chosen] = await connection.query<RowDataPacket[]>(
        `SELECT id FROM ${this.table}
         WHERE transport = 'default' AND status = 'PENDING' AND next_attempt_at <= UTC_TIMESTAMP(6)
         ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED`,
        [limit],
      );
      const ids = chosen.map((row) => String(row.id));
      if (ids.length === 0) {
        await connection.commit();
        return [];
      }
      await connection.query(`UPDATE ${this.table} SET status = 'PROCESSING', claimed_at = UTC_TIMESTAMP(6) WHERE id IN (?)`, [ids]);
      const [rows] = await connection.query<RowDataPacket[]>(
        `SELECT id, message_id, message_type, exchange, routing_key, payload FROM ${this.table} WHERE id IN (?)`,
        [ids],
      );
      await connection.commit();
      return rows as RelayRow[];
    } catch (error) {
      await connection.rollback().catch(() => undefined);
      throw error;
    } finally {
      connection.release();
    }
  }

  async settle(ids: string[]): Promise<void> {
    await this.pool.query(`UPDATE ${this.table} SET status = 'DONE', processed_at = UTC_TIMESTAMP(6) WHERE id IN (?)`, [ids]);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
