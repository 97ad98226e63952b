import { Client } from 'pg';
import { POSTGRES_URL } from './environment';

/** Runs SQL on a short-lived connection of its own (not the app's pool). */
export async function sql<T = any>(text: string, params: unknown[] = []): Promise<T[]> {
  const client = new Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/** Gives a test file a fresh schema of its own, so files can run in parallel. */
export async function freshSchema(schema: string): Promise<string> {
  await sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await sql(`CREATE SCHEMA "${schema}"`);
  return schema;
}

/** Counts outbox rows by status. */
export async function statusCounts(schema: string, table = 'outbox_message'): Promise<Record<string, number>> {
  const rows = await sql<{ status: string; n: string }>(`SELECT status, count(*) AS n FROM "${schema}"."${table}" GROUP BY status`);
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}
