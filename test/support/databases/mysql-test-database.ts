import { Connection, createConnection } from 'mysql2/promise';
import type { DataSourceOptions } from 'typeorm';
import type { DataSourceExtras } from '../database';
import { MARIADB_URL, mysqlUrl } from '../environment';
import { BaseTestDatabase } from './base-test-database';

/** Where a MariaDB/MySQL URL points, as separate settings (TypeORM lets `url` override them). */
export interface ServerAddress {
  host: string;
  port: number;
  user: string;
  password: string;
}

export function serverAddress(url: string): ServerAddress {
  const parsed = new URL(url);
  return {
    host: parsed.hostname,
    port: Number(parsed.port || 3306),
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
  };
}

/**
 * A database of its own on the MariaDB server at MARIADB_URL, or on the MySQL 8 server at
 * MYSQL_URL. Times are DATETIME(6) in UTC, so every connection reads them as UTC.
 */
export class MysqlTestDatabase extends BaseTestDatabase {
  constructor(
    name: string,
    readonly kind: 'mariadb' | 'mysql',
  ) {
    super(name);
  }

  get server(): ServerAddress {
    return serverAddress(this.kind === 'mariadb' ? MARIADB_URL : mysqlUrl());
  }

  dataSourceOptions({ poolSize = 10, sessionName }: DataSourceExtras = {}): DataSourceOptions {
    const { host, port, user, password } = this.server;
    return {
      type: this.kind,
      host,
      port,
      // A user of the session's name (created by `prepareSessionIdentity`) is how the server tells it apart.
      username: sessionName ?? user,
      password: sessionName ? '' : password,
      database: this.name,
      timezone: 'Z',
      synchronize: true,
      poolSize,
    };
  }

  async reset(): Promise<void> {
    await this.onServer(async (connection) => {
      await connection.query(`DROP DATABASE IF EXISTS \`${this.name}\``);
      await connection.query(`CREATE DATABASE \`${this.name}\` CHARACTER SET utf8mb4`);
    });
  }

  timeAgo(ms: number): string {
    return `(UTC_TIMESTAMP(6) - INTERVAL ${Math.round(ms * 1000)} MICROSECOND)`;
  }

  placeholder(): string {
    return '?';
  }

  table(name: string): string {
    return `\`${this.name}\`.\`${name}\``;
  }

  /** Runs `work` on a connection to the server outside any test database (for DDL and users). */
  async onServer<T>(work: (connection: Connection) => Promise<T>): Promise<T> {
    const connection = await createConnection({ ...this.server, timezone: 'Z' });
    try {
      return await work(connection);
    } finally {
      await connection.end();
    }
  }

  protected async run(text: string, params: unknown[]): Promise<unknown[]> {
    const connection = await createConnection({ ...this.server, database: this.name, timezone: 'Z', supportBigNumbers: true, bigNumberStrings: true });
    try {
      const [result] = await connection.query(text, params);
      return Array.isArray(result) ? result : [];
    } finally {
      await connection.end();
    }
  }
}
