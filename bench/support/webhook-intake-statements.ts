import type { TestDatabase } from '../../test/support/database';

/** The hand-written SQL of the webhook-intake bench, spelled for one database. */
export interface WebhookIntakeStatements {
  /**
   * Stores one PENDING row in the library's inbox table, nothing for a duplicate (same consumer
   * and message id): parameters consumer, message id, type, bizKey, orderingKey, method, path,
   * body, headers (JSON text), max attempts — the columns `@WebhookInbox()` writes.
   */
  insertPending: string;
  /** Empties the inbox table between runs. */
  truncate: string;
  /** Counts a consumer's rows (parameter: the consumer), as `n`. */
  countStored: string;
}

const COLUMNS = 'consumer, message_id, message_type, biz_key, ordering_key, exchange, routing_key, payload, headers, max_attempts, status';

/** The statements for `database`'s namespace (a PostgreSQL schema or a MariaDB database). */
export function webhookIntakeStatements(database: TestDatabase): WebhookIntakeStatements {
  switch (database.kind) {
    case 'postgres': {
      const table = `"${database.name}".inbox_message`;
      return {
        insertPending: `INSERT INTO ${table} (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'PENDING') ON CONFLICT DO NOTHING`,
        truncate: `TRUNCATE ${table}`,
        countStored: `SELECT count(*) AS n FROM ${table} WHERE consumer = $1`,
      };
    }
    case 'mariadb':
    case 'mysql': {
      // The times from the server's UTC clock, as the table's other writers set them.
      const table = `\`${database.name}\`.inbox_message`;
      return {
        insertPending: `INSERT IGNORE INTO ${table} (${COLUMNS}, next_attempt_at, created_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'PENDING', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`,
        truncate: `TRUNCATE TABLE ${table}`,
        countStored: `SELECT count(*) AS n FROM ${table} WHERE consumer = ?`,
      };
    }
    case 'sqlite':
      throw new Error('the webhook-intake bench measures server databases only');
  }
}
