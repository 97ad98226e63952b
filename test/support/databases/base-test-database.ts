import type { DataSourceOptions, EntityManager } from 'typeorm';
import type { DatabaseKind, DataSourceExtras, TestDatabase } from '../database';
import { preparePortableSql, SqlSpelling } from './portable-sql';

/** What every kind shares: portable SQL in, rows out, counts as numbers. */
export abstract class BaseTestDatabase implements TestDatabase, SqlSpelling {
  abstract readonly kind: DatabaseKind;

  constructor(readonly name: string) {}

  abstract dataSourceOptions(extra?: DataSourceExtras): DataSourceOptions;
  abstract reset(): Promise<void>;
  abstract timeAgo(ms: number): string;
  abstract placeholder(index: number): string;
  abstract table(name: string): string;
  /** Runs SQL already in this database's spelling on a connection of its own. */
  protected abstract run(text: string, params: unknown[]): Promise<unknown[]>;

  async sql<T = any>(text: string, params: unknown[] = []): Promise<T[]> {
    const prepared = preparePortableSql(text, params, this);
    return (await this.run(prepared.text, prepared.params)) as T[];
  }

  async sqlOn<T = any>(manager: EntityManager, text: string, params: unknown[] = []): Promise<T[]> {
    const prepared = preparePortableSql(text, params, this);
    const result = await manager.query(prepared.text, prepared.params);
    // MariaDB/MySQL answer a write with a result header, not rows.
    return Array.isArray(result) ? (result as T[]) : [];
  }

  async statusCounts(table = 'outbox_message'): Promise<Record<string, number>> {
    const rows = await this.sql<{ status: string; n: unknown }>(`SELECT status, count(*) AS n FROM {${table}} GROUP BY status`);
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  }
}
