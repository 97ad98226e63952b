import { createPool, Pool as MysqlPool, RowDataPacket } from 'mysql2/promise';
import { Pool as PgPool } from 'pg';
import type { TestDatabase } from '../../test/support/database';
import type { MysqlTestDatabase } from '../../test/support/databases/mysql-test-database';
import { POSTGRES_URL } from '../../test/support/environment';
import { BENCH_BODY } from './broker';

/**
 * What a lean relay's table pays beyond the minimum (an id, a message id, the payload, a status
 * and one index on claimable rows): each is one of the library's costs, priced alone by the
 * price list (`bench/price-list.bench.ts`).
 */
export interface LeanTableCosts {
  /** A unique index on `message_id`. */
  messageIdIndex?: boolean;
  /** `message_type` and `biz_key` columns with the unique `(biz_key, message_type)` index, every row with a business key. */
  bizKeyIndex?: boolean;
  /** A `transport` column leading the claim index, and the claim filtering on it (the library's lane index). */
  laneIndex?: boolean;
  /** A `claim_token` written by the claim and checked by the settle (fencing). */
  claimToken?: boolean;
  /** The library's other columns (type, keys, destination, headers, attempts, times, claimant), the claim and settle writing its times. */
  extraColumns?: boolean;
  /**
   * The library's processing and ordering indexes (`claimed_at` and `ordering_key`, under
   * `status` where the database has no partial index), which a claim and a settle rewrite;
   * with `extraColumns` only, whose columns they index. `'processing'` or `'ordering'`: that one alone.
   */
  stateIndexes?: boolean | 'processing' | 'ordering';
}

/** A claimed row, as a lean relay publishes it. */
export interface LeanRow {
  id: string;
  message_id: string;
  payload: string;
  created_at?: string;
}

/** A lean relay's table on one database: built afresh, seeded, claimed from and settled. */
export interface LeanStore {
  /** Inserts `count` PENDING rows of ~1 KB in one transaction; resolves with the time of its COMMIT. */
  seed(count: number): Promise<number>;
  /** Claims up to `limit` PENDING rows, oldest first, under `token`. */
  claim(limit: number, token: string): Promise<LeanRow[]>;
  /** Marks the rows DONE (where `token` still holds them, with a claim token). */
  settle(ids: string[], token: string): Promise<void>;
  /** Rows not yet DONE. */
  unfinished(): Promise<number>;
  close(): Promise<void>;
}

const TABLE = 'lean_outbox';

/** Whether `costs` asks for the library's `index` (see `LeanTableCosts.stateIndexes`). */
function hasStateIndex(costs: LeanTableCosts, index: 'processing' | 'ordering'): boolean {
  return !!costs.extraColumns && (costs.stateIndexes === true || costs.stateIndexes === index);
}

/** Builds the lean table with `costs` in `database`'s namespace and opens a store on it with `connections` connections. */
export async function openLeanStore(database: TestDatabase, costs: LeanTableCosts, connections: number): Promise<LeanStore> {
  if (database.kind === 'postgres') return PostgresLeanStore.open(database.name, costs, connections);
  if (database.kind === 'mariadb' || database.kind === 'mysql') return MysqlLeanStore.open(database as MysqlTestDatabase, costs, connections);
  throw new Error(`no lean relay for ${database.kind}`);
}

/** The extra columns' values, as `publish()` would have written them for the bench's messages. */
const EXTRA_VALUES = {
  exchange: 'bench_price_list',
  routingKey: 'bench.price',
  headers: '{}',
};

class PostgresLeanStore implements LeanStore {
  /** Rows seeded so far: business keys go on from there, unique across seeds. */
  private seeded = 0;

  private constructor(
    private readonly pool: PgPool,
    private readonly table: string,
    private readonly costs: LeanTableCosts,
  ) {}

  static async open(schema: string, costs: LeanTableCosts, connections: number): Promise<PostgresLeanStore> {
    const pool = new PgPool({ connectionString: POSTGRES_URL, max: connections + 1, application_name: 'bench-price-list' });
    const table = `"${schema}".${TABLE}`;
    const columns = [
      'id bigserial PRIMARY KEY',
      'message_id uuid NOT NULL',
      'payload jsonb NOT NULL',
      "status text NOT NULL DEFAULT 'PENDING'",
      ...(costs.bizKeyIndex || costs.extraColumns ? ["message_type text NOT NULL DEFAULT ''", 'biz_key text NULL'] : []),
      ...(costs.laneIndex ? ["transport text NOT NULL DEFAULT 'default'"] : []),
      ...(costs.claimToken ? ['claim_token uuid NULL'] : []),
      ...(costs.extraColumns
        ? [
            'ordering_key text NULL',
            'exchange text NOT NULL',
            'routing_key text NOT NULL',
            "destination text NOT NULL DEFAULT ''",
            'headers jsonb NOT NULL',
            'attempts int NOT NULL DEFAULT 0',
            'max_attempts int NOT NULL DEFAULT 10',
            'next_attempt_at timestamptz NOT NULL DEFAULT now()',
            'claimed_at timestamptz NULL',
            'claimed_by text NULL',
            'last_error text NULL',
            'created_at timestamptz NOT NULL DEFAULT now()',
            'processed_at timestamptz NULL',
          ]
        : []),
    ];
    await pool.query(`DROP TABLE IF EXISTS ${table}`);
    await pool.query(`CREATE TABLE ${table} (${columns.join(', ')})`);
    await pool.query(`CREATE INDEX ON ${table} (${costs.laneIndex ? 'transport, ' : ''}id) WHERE status = 'PENDING'`);
    if (costs.messageIdIndex) await pool.query(`CREATE UNIQUE INDEX ON ${table} (message_id)`);
    if (costs.bizKeyIndex) await pool.query(`CREATE UNIQUE INDEX ON ${table} (biz_key, message_type) WHERE biz_key IS NOT NULL`);
    if (hasStateIndex(costs, 'processing')) await pool.query(`CREATE INDEX ON ${table} (claimed_at) WHERE status = 'PROCESSING'`);
    if (hasStateIndex(costs, 'ordering')) {
      await pool.query(`CREATE INDEX ON ${table} (ordering_key, id) WHERE status IN ('PENDING', 'PROCESSING', 'FAILED', 'MANUAL_REQUIRED')`);
    }
    return new PostgresLeanStore(pool, table, costs);
  }

  async seed(count: number): Promise<number> {
    const names = ['message_id', 'payload'];
    const values = [`gen_random_uuid()`, `jsonb_build_object('n', n, 'blob', $1::text)`];
    if (this.costs.bizKeyIndex || this.costs.extraColumns) {
      names.push('message_type', 'biz_key');
      values.push(`'bench.price'`, `'bench-' || n`);
    }
    if (this.costs.extraColumns) {
      names.push('exchange', 'routing_key', 'headers');
      values.push(`$2`, `$3`, `$4::jsonb`);
    }
    const params: unknown[] = [BENCH_BODY.blob];
    if (this.costs.extraColumns) params.push(EXTRA_VALUES.exchange, EXTRA_VALUES.routingKey, EXTRA_VALUES.headers);
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO ${this.table} (${names.join(', ')}) SELECT ${values.join(', ')} FROM generate_series(${this.seeded + 1}, ${this.seeded + count}) AS n`,
        params,
      );
      const started = performance.now();
      await client.query('COMMIT');
      this.seeded += count;
      return started;
    } finally {
      client.release();
    }
  }

  async claim(limit: number, token: string): Promise<LeanRow[]> {
    const sets = [`status = 'PROCESSING'`];
    const params: unknown[] = [limit];
    if (this.costs.claimToken) sets.push(`claim_token = $${params.push(token)}`);
    if (this.costs.extraColumns) sets.push(`claimed_at = now()`, `claimed_by = 'bench'`);
    const lane = this.costs.laneIndex ? `transport = 'default' AND ` : '';
    const { rows } = await this.pool.query<LeanRow>(
      `UPDATE ${this.table} SET ${sets.join(', ')}
       WHERE id IN (SELECT id FROM ${this.table} WHERE ${lane}status = 'PENDING' ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING id, message_id, payload::text AS payload${this.costs.extraColumns ? ', created_at' : ''}`,
      params,
    );
    return rows;
  }

  async settle(ids: string[], token: string): Promise<void> {
    const fence = this.costs.claimToken ? ' AND claim_token = $2' : '';
    const done = this.costs.extraColumns ? ', processed_at = now()' : '';
    await this.pool.query(`UPDATE ${this.table} SET status = 'DONE'${done} WHERE id = ANY($1::bigint[])${fence}`, this.costs.claimToken ? [ids, token] : [ids]);
  }

  async unfinished(): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${this.table} WHERE status <> 'DONE'`);
    return Number(rows[0].n);
  }

  async close(): Promise<void> {
    await this.pool.query(`DROP TABLE IF EXISTS ${this.table}`).catch(() => undefined);
    await this.pool.end();
  }
}

/**
 * MariaDB and MySQL have no partial index: the claim index leads with `status`, as the library's.
 * A claim is one READ COMMITTED transaction (`SELECT … FOR UPDATE SKIP LOCKED`, `UPDATE`, read back).
 */
class MysqlLeanStore implements LeanStore {
  /** Rows seeded so far: business keys go on from there, unique across seeds. */
  private seeded = 0;

  private constructor(
    private readonly pool: MysqlPool,
    private readonly table: string,
    private readonly costs: LeanTableCosts,
  ) {}

  static async open(database: MysqlTestDatabase, costs: LeanTableCosts, connections: number): Promise<MysqlLeanStore> {
    const pool = createPool({
      ...database.server,
      database: database.name,
      timezone: 'Z',
      connectionLimit: connections + 1,
      supportBigNumbers: true,
      bigNumberStrings: true,
    });
    pool.on('connection', (connection) => connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED'));
    const table = `\`${database.name}\`.${TABLE}`;
    const columns = [
      'id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY',
      'message_id char(36) NOT NULL',
      'payload longtext NOT NULL',
      "status varchar(20) NOT NULL DEFAULT 'PENDING'",
      ...(costs.bizKeyIndex || costs.extraColumns ? ["message_type varchar(255) NOT NULL DEFAULT ''", 'biz_key varchar(255) NULL'] : []),
      ...(costs.laneIndex ? ["transport varchar(100) NOT NULL DEFAULT 'default'"] : []),
      ...(costs.claimToken ? ['claim_token char(36) NULL'] : []),
      ...(costs.extraColumns
        ? [
            'ordering_key varchar(255) NULL',
            'exchange varchar(255) NOT NULL',
            'routing_key varchar(255) NOT NULL',
            "destination varchar(255) NOT NULL DEFAULT ''",
            'headers longtext NOT NULL',
            'attempts int NOT NULL DEFAULT 0',
            'max_attempts int NOT NULL DEFAULT 10',
            'next_attempt_at datetime(6) NOT NULL DEFAULT UTC_TIMESTAMP(6)',
            'claimed_at datetime(6) NULL',
            'claimed_by varchar(255) NULL',
            'last_error text NULL',
            'created_at datetime(6) NOT NULL DEFAULT UTC_TIMESTAMP(6)',
            'processed_at datetime(6) NULL',
          ]
        : []),
      `KEY claimable (${costs.laneIndex ? 'transport, ' : ''}status, id)`,
      ...(costs.messageIdIndex ? ['UNIQUE KEY message_id (message_id)'] : []),
      ...(costs.bizKeyIndex ? ['UNIQUE KEY type_biz_key (biz_key, message_type)'] : []),
      ...(hasStateIndex(costs, 'processing') ? ['KEY processing (status, claimed_at)'] : []),
      ...(hasStateIndex(costs, 'ordering') ? ['KEY ordering (ordering_key, status, id)'] : []),
    ];
    await pool.query(`DROP TABLE IF EXISTS ${table}`);
    await pool.query(`CREATE TABLE ${table} (${columns.join(', ')}) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`);
    return new MysqlLeanStore(pool, table, costs);
  }

  async seed(count: number): Promise<number> {
    const names = ['message_id', 'payload'];
    const values = ['UUID()', `JSON_OBJECT('n', seq, 'blob', ?)`];
    if (this.costs.bizKeyIndex || this.costs.extraColumns) {
      names.push('message_type', 'biz_key');
      values.push(`'bench.price'`, `CONCAT('bench-', seq + ${this.seeded})`);
    }
    if (this.costs.extraColumns) {
      names.push('exchange', 'routing_key', 'headers');
      values.push('?', '?', '?');
    }
    const params: unknown[] = [BENCH_BODY.blob];
    if (this.costs.extraColumns) params.push(EXTRA_VALUES.exchange, EXTRA_VALUES.routingKey, EXTRA_VALUES.headers);
    const connection = await this.pool.getConnection();
    try {
      await connection.query('BEGIN');
      await connection.query(`INSERT INTO ${this.table} (${names.join(', ')}) SELECT ${values.join(', ')} FROM seq_1_to_${count}`, params);
      const started = performance.now();
      await connection.query('COMMIT');
      this.seeded += count;
      return started;
    } finally {
      connection.release();
    }
  }

  claim(limit: number, token: string): Promise<LeanRow[]> {
    return retriedOnDeadlock(() => this.claimOnce(limit, token));
  }

  private async claimOnce(limit: number, token: string): Promise<LeanRow[]> {
    const connection = await this.pool.getConnection();
    try {
      await connection.beginTransaction();
      const lane = this.costs.laneIndex ? `transport = 'default' AND ` : '';
      const [chosen] = await connection.query<RowDataPacket[]>(
        `SELECT id FROM ${this.table} WHERE ${lane}status = 'PENDING' ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED`,
        [limit],
      );
      const ids = chosen.map((row) => String(row.id));
      if (ids.length === 0) {
        await connection.commit();
        return [];
      }
      const sets = [`status = 'PROCESSING'`];
      const params: unknown[] = [];
      if (this.costs.claimToken) {
        sets.push('claim_token = ?');
        params.push(token);
      }
      if (this.costs.extraColumns) sets.push('claimed_at = UTC_TIMESTAMP(6)', `claimed_by = 'bench'`);
      await connection.query(`UPDATE ${this.table} SET ${sets.join(', ')} WHERE id IN (?)`, [...params, ids]);
      const [rows] = await connection.query<RowDataPacket[]>(
        `SELECT id, message_id, payload${this.costs.extraColumns ? ', created_at' : ''} FROM ${this.table} WHERE id IN (?)`,
        [ids],
      );
      await connection.commit();
      return rows as LeanRow[];
    } catch (error) {
      await connection.rollback().catch(() => undefined);
      throw error;
    } finally {
      connection.release();
    }
  }

  async settle(ids: string[], token: string): Promise<void> {
    const fence = this.costs.claimToken ? ' AND claim_token = ?' : '';
    const done = this.costs.extraColumns ? ', processed_at = UTC_TIMESTAMP(6)' : '';
    await retriedOnDeadlock(() =>
      this.pool.query(`UPDATE ${this.table} SET status = 'DONE'${done} WHERE id IN (?)${fence}`, this.costs.claimToken ? [ids, token] : [ids]),
    );
  }

  async unfinished(): Promise<number> {
    const [rows] = await this.pool.query<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM ${this.table} WHERE status <> 'DONE'`);
    return Number(rows[0].n);
  }

  async close(): Promise<void> {
    await this.pool.query(`DROP TABLE IF EXISTS ${this.table}`).catch(() => undefined);
    await this.pool.end();
  }
}

/**
 * Runs `statement` again when InnoDB chose it as a deadlock's victim (rolled back whole), as any
 * relay on MariaDB must: with the processing and ordering indexes, two loops' claims and settles
 * lock entries of the same secondary indexes in different orders.
 */
async function retriedOnDeadlock<T>(statement: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await statement();
    } catch (error) {
      if ((error as { errno?: number }).errno !== 1213 || attempt >= 10) throw error;
    }
  }
}
