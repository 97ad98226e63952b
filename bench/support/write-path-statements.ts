import { randomUUID } from 'node:crypto';
import type { TestDatabase } from '../../test/support/database';

/** A statement and its parameters, as `EntityManager.query` takes them. */
export type Statement = [sql: string, params: unknown[]];

/** The hand-written SQL of the write-path bench, spelled for one database. */
export interface WritePathStatements {
  /** The business table every measured transaction inserts into. */
  createBusinessTable: string;
  /** Inserts one business row carrying `payload` (JSON text). */
  businessInsert(payload: string): Statement;
  /** Inserts one PENDING outbox row with `bizKey` and `payload` (JSON text), as the library's dialect does. */
  outboxInsert(bizKey: string, payload: string): Statement;
}

/** The statements for `database`'s namespace (a PostgreSQL schema or a MariaDB database). */
export function writePathStatements(database: TestDatabase): WritePathStatements {
  switch (database.kind) {
    case 'postgres':
      return postgresStatements(database.name);
    case 'mariadb':
    case 'mysql':
      return mysqlStatements(database.name);
    case 'sqlite':
      throw new Error('the write-path bench measures server databases only');
  }
}

function postgresStatements(schema: string): WritePathStatements {
  const businessInsert = `INSERT INTO "${schema}".bench_order (payload) VALUES ($1)`;
  const outboxInsert = `INSERT INTO "${schema}".outbox_message (message_id, message_type, biz_key, exchange, routing_key, payload, headers, status, max_attempts)
     VALUES (gen_random_uuid(), 'bench.written', $1, 'bench', 'x', $2, '{}', 'PENDING', 10)`;
  return {
    createBusinessTable: `CREATE TABLE IF NOT EXISTS "${schema}".bench_order (id bigserial PRIMARY KEY, payload json NOT NULL)`,
    businessInsert: (payload) => [businessInsert, [payload]],
    outboxInsert: (bizKey, payload) => [outboxInsert, [bizKey, payload]],
  };
}

/**
 * The outbox INSERT is the MySQL dialect's own (`MysqlOutboxDialect.insert`): IGNORE, every value
 * a parameter, the message id a UUID made in Node, times from the server's UTC clock.
 */
function mysqlStatements(database: string): WritePathStatements {
  const businessInsert = `INSERT INTO \`${database}\`.bench_order (payload) VALUES (?)`;
  const outboxInsert = `INSERT IGNORE INTO \`${database}\`.outbox_message
       (message_id, message_type, biz_key, ordering_key, exchange, routing_key, payload, headers, status, max_attempts, next_attempt_at, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'PENDING', ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`;
  return {
    createBusinessTable: `CREATE TABLE IF NOT EXISTS \`${database}\`.bench_order (id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY, payload json NOT NULL)`,
    businessInsert: (payload) => [businessInsert, [payload]],
    outboxInsert: (bizKey, payload) => [outboxInsert, [randomUUID(), 'bench.written', bizKey, null, 'bench', 'x', payload, '{}', 10]],
  };
}
