import { Client } from 'pg';
import { POSTGRES_URL } from './environment';

/**
 * Holds a PostgreSQL advisory lock named `name` (a test file's schema) until the returned
 * function is called, so two runs of the same test file on one machine (two developers, a watch
 * run) take turns instead of dropping each other's schema and queues. The lock lives in its
 * own session: if the test process dies, PostgreSQL releases it.
 */
export async function runExclusively(name: string, timeoutMs = 45_000): Promise<() => Promise<void>> {
  const client = new Client({ connectionString: POSTGRES_URL });
  await client.connect();
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const { rows } = await client.query<{ locked: boolean }>(`SELECT pg_try_advisory_lock(hashtext('nestjs-outbox-test:' || $1)) AS locked`, [name]);
      if (rows[0].locked) break;
      if (Date.now() > deadline) throw new Error(`another run of the tests that use "${name}" did not finish within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  return () => client.end().catch(() => undefined);
}
