import { Client } from 'pg';
import { connect } from 'amqplib';
import { AMQP_URL, POSTGRES_URL } from './environment';

/**
 * Fails fast, with the URL to fix, when a service the integration tests need does not answer.
 * Where a Docker engine answers and no URL was given, services could come from testcontainers;
 * this machine's CI runs them locally, so the URLs are used as they are.
 */
export default async function globalSetup(): Promise<void> {
  const pg = new Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 5_000 });
  try {
    await pg.connect();
    await pg.query('SELECT 1');
  } catch (error) {
    throw new Error(`PostgreSQL does not answer at ${POSTGRES_URL} (set DATABASE_URL): ${(error as Error).message}`);
  } finally {
    await pg.end().catch(() => undefined);
  }
  try {
    const connection = await connect(AMQP_URL);
    await connection.close();
  } catch (error) {
    throw new Error(`RabbitMQ does not answer at ${AMQP_URL} (set AMQP_URL): ${(error as Error).message}`);
  }
}
