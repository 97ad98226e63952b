import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { TcpProxy } from './tcp-proxy';

const run = promisify(execFile);
const SCRIPTS = resolve(__dirname, '../../scripts/pg-pair');
const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** Why a PostgreSQL pair cannot be started here, or undefined when it can. */
export function pgPairUnavailable(): string | undefined {
  for (const binary of ['initdb', 'pg_ctl', 'pg_basebackup']) {
    if (!existsSync(join(PG_BIN, binary))) return `no ${binary} in ${PG_BIN} (install postgresql-15, or set PG_BIN)`;
  }
  return undefined;
}

/**
 * A PostgreSQL primary and streaming standby of their own (scripts/pg-pair), behind two TCP proxies
 * the test owns: `address`, the stable address applications connect to (a failover manager's
 * virtual IP), and `replication`, the standby's link to the primary, which a test black-holes to
 * make the standby lag.
 */
export class PgPair {
  private constructor(
    private readonly env: NodeJS.ProcessEnv,
    readonly primaryPort: number,
    readonly standbyPort: number,
    readonly address: TcpProxy,
    readonly replication: TcpProxy,
  ) {}

  /** Starts the pair (synchronous replication when `sync`) in a fresh directory named after `name`. */
  static async start(name: string, options: { sync: boolean }): Promise<PgPair> {
    const [primaryPort, standbyPort] = [await freePort(), await freePort()];
    const replication = await TcpProxy.start('127.0.0.1', primaryPort);
    const address = await TcpProxy.start('127.0.0.1', primaryPort);
    const env = {
      ...process.env,
      PG_BIN,
      PG_PAIR_DIR: join(process.env.PG_PAIR_ROOT ?? tmpdir(), `${process.env.TEST_NAMESPACE_PREFIX ?? ''}${name}`),
      PG_PAIR_PRIMARY_PORT: String(primaryPort),
      PG_PAIR_STANDBY_PORT: String(standbyPort),
      PG_PAIR_UPSTREAM_PORT: String(replication.port),
      PG_PAIR_SYNC: options.sync ? '1' : '0',
    };
    const pair = new PgPair(env, primaryPort, standbyPort, address, replication);
    await pair.script('start.sh');
    await pair.waitForStandby();
    return pair;
  }

  /** A URL of the stable address, to `database`. */
  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.address.port}/${database}`;
  }

  /** Runs `text` through the stable address. */
  async sql<T = Record<string, unknown>>(text: string, params: unknown[] = []): Promise<T[]> {
    return this.on(this.address.port, text, params);
  }

  /** Runs `text` on the server at `port` directly. */
  async on<T = Record<string, unknown>>(port: number, text: string, params: unknown[] = []): Promise<T[]> {
    const client = new Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` });
    await client.connect();
    try {
      return (await client.query(text, params)).rows as T[];
    } finally {
      await client.end();
    }
  }

  /** Kills -9 the primary, promotes the standby and points the stable address at it; resolves with when the address moved. */
  async failover(): Promise<number> {
    await this.script('failover.sh');
    this.address.retarget('127.0.0.1', this.standbyPort);
    return Date.now();
  }

  /**
   * After `failover()`: rebuilds the old primary as a standby of the promoted server, streaming
   * through the `replication` proxy (restored, and re-pointed); resolves once it streams.
   */
  async rejoin(): Promise<void> {
    this.replication.restore();
    this.replication.retarget('127.0.0.1', this.standbyPort);
    await this.script('rejoin.sh', { PG_PAIR_REJOIN_UPSTREAM_PORT: String(this.replication.port) });
    await this.waitForStandby(this.standbyPort);
  }

  async stop(): Promise<void> {
    await this.script('stop.sh', { PG_PAIR_WIPE: '1' }).catch(() => undefined);
    await Promise.all([this.address.close(), this.replication.close()]);
  }

  /** Until the primary (at `port`) lists a standby as streaming with a flush position. */
  private async waitForStandby(port = this.primaryPort): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const rows = await this.on<{ state: string }>(port, `SELECT state FROM pg_stat_replication WHERE flush_lsn IS NOT NULL`);
      if (rows.some((row) => row.state === 'streaming')) return;
      if (Date.now() > deadline) throw new Error('the standby did not start streaming within 60 s');
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private async script(file: string, extra: NodeJS.ProcessEnv = {}): Promise<void> {
    try {
      await run(join(SCRIPTS, file), [], { env: { ...this.env, ...extra }, timeout: 120_000 });
    } catch (error) {
      const { stdout, stderr } = error as { stdout?: string; stderr?: string };
      throw new Error(`scripts/pg-pair/${file} failed: ${(error as Error).message}\n${stdout ?? ''}${stderr ?? ''}`);
    }
  }
}

/** A TCP port free now on 127.0.0.1. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}
