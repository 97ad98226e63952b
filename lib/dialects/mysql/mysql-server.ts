import { DataSource } from 'typeorm';

/** What the connected MySQL or MariaDB server supports, read once at start-up. */
export interface MysqlServer {
  flavor: 'mysql' | 'mariadb';
  /** `major.minor.patch`, e.g. `10.11.19`. */
  version: string;
  /** `FOR UPDATE SKIP LOCKED`: MySQL 8.0.1+, MariaDB 10.6+. */
  skipLocked: boolean;
  /**
   * `FOR UPDATE OF <alias>` (MySQL 8.0.1+): names the one table whose rows a claim locks, so the
   * ordering rule's subqueries stay plain reads whatever the optimizer makes of them. MariaDB has
   * no such clause; its subqueries of a locking SELECT are plain reads already.
   */
  lockingOf: boolean;
  /**
   * The tables' collation: binary, so that keys compare like PostgreSQL's (`Order-1` and
   * `order-1` are two business keys), and NO PAD where the server has one (`'a'` and `'a '` too).
   */
  collation: string;
  /** Expression defaults such as `DEFAULT (UTC_TIMESTAMP(6))`: MySQL 8.0.13+, MariaDB 10.2.1+. */
  expressionDefaults: boolean;
  /**
   * `innodb_rollback_on_timeout`: a lock wait timeout rolls back the whole transaction, not only
   * the statement. Set at the server's start only, so read once.
   */
  rollbackOnTimeout: boolean;
}

/** Asks the server its version and settings: the claim strategy and collation depend on them. */
export async function detectMysqlServer(dataSource: DataSource): Promise<MysqlServer> {
  const rows: { version: string; rollbackOnTimeout: unknown }[] = await dataSource.query(
    'SELECT VERSION() AS version, @@innodb_rollback_on_timeout AS rollbackOnTimeout',
  );
  return describeMysqlServer(rows[0].version, Number(rows[0].rollbackOnTimeout) === 1);
}

/**
 * The capabilities of a server from its `VERSION()` text, e.g. `10.11.19-MariaDB-0+deb12u1` or
 * `8.0.36`, and its `innodb_rollback_on_timeout`.
 */
export function describeMysqlServer(versionText: string, rollbackOnTimeout = false): MysqlServer {
  const flavor = /mariadb/i.test(versionText) ? 'mariadb' : 'mysql';
  const [major = 0, minor = 0, patch = 0] = (/^(\d+)\.(\d+)(?:\.(\d+))?/.exec(versionText) ?? []).slice(1).map((part) => Number(part ?? 0));
  const atLeast = (a: number, b: number, c: number) => (major !== a ? major > a : minor !== b ? minor > b : patch >= c);
  const version = `${major}.${minor}.${patch}`;
  if (flavor === 'mariadb') {
    return {
      flavor,
      version,
      skipLocked: atLeast(10, 6, 0),
      lockingOf: false,
      collation: 'utf8mb4_nopad_bin',
      expressionDefaults: atLeast(10, 2, 1),
      rollbackOnTimeout,
    };
  }
  return {
    flavor,
    version,
    skipLocked: atLeast(8, 0, 1),
    lockingOf: atLeast(8, 0, 1),
    collation: atLeast(8, 0, 17) ? 'utf8mb4_0900_bin' : 'utf8mb4_bin',
    expressionDefaults: atLeast(8, 0, 13),
    rollbackOnTimeout,
  };
}
