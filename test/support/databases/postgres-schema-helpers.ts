import { Client } from 'pg';
import { POSTGRES_URL } from '../environment';

/**
 * Runs PostgreSQL SQL (`$1` placeholders, names as written) on a short-lived connection of its
 * own. For PostgreSQL-only tests and benchmarks; portable tests use `TestDatabase.sql`.
 */
export async function sql<T = any>(text: string, params: unknown[] = []): Promise<T[]> {
  const client = new Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/** Gives a PostgreSQL-only test a fresh schema of its own. */
export async function freshSchema(schema: string): Promise<string> {
  await sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await sql(`CREATE SCHEMA "${schema}"`);
  return schema;
}
