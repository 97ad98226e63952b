import { Client } from 'pg';
import type { DataSourceOptions } from 'typeorm';
import type { DataSourceExtras } from '../database';
import { POSTGRES_URL } from '../environment';
import { BaseTestDatabase } from './base-test-database';

/** A schema of its own in the PostgreSQL database at DATABASE_URL. */
export class PostgresTestDatabase extends BaseTestDatabase {
  readonly kind = 'postgres' as const;

  dataSourceOptions({ poolSize = 10, sessionName }: DataSourceExtras = {}): DataSourceOptions {
    return {
      type: 'postgres',
      url: POSTGRES_URL,
      schema: this.name,
      synchronize: true,
      extra: { max: poolSize },
      ...(sessionName ? { applicationName: sessionName } : {}),
    };
  }

  async reset(): Promise<void> {
    await this.run(`DROP SCHEMA IF EXISTS "${this.name}" CASCADE`, []);
    await this.run(`CREATE SCHEMA "${this.name}"`, []);
  }

  timeAgo(ms: number): string {
    return `(now() - ${Math.round(ms)} * interval '1 millisecond')`;
  }

  placeholder(index: number): string {
    return `$${index}`;
  }

  table(name: string): string {
    return `"${this.name}"."${name}"`;
  }

  protected async run(text: string, params: unknown[]): Promise<unknown[]> {
    // The schema leads the search path, as it does for the app's DataSource.
    const client = new Client({ connectionString: POSTGRES_URL, options: `-c search_path=${this.name},public` });
    await client.connect();
    try {
      return (await client.query(text, params)).rows;
    } finally {
      await client.end();
    }
  }
}
