import type { TestDatabase } from './database';
import { MysqlTestDatabase } from './databases/mysql-test-database';

/**
 * Lets the server tell the sessions of one application (a child process, by its name) apart.
 * PostgreSQL needs nothing: the app sets its application_name. MariaDB/MySQL have no such
 * label in their process list, so the app logs in as a user of its own name, created here.
 */
export async function prepareSessionIdentity(database: TestDatabase, name: string): Promise<void> {
  if (!(database instanceof MysqlTestDatabase)) return;
  await database.onServer(async (connection) => {
    await connection.query(`CREATE USER IF NOT EXISTS ?@'%'`, [name]);
    await connection.query(`GRANT ALL PRIVILEGES ON \`${database.name}\`.* TO ?@'%'`, [name]);
  });
}

/**
 * How many sessions the application `name` still has on the server. After a SIGKILL the server
 * may finish a statement the process had sent; once this is 0, nothing of it can still change a
 * row. SQLite has no server: the engine died with the process, and so did its unfinished writes.
 */
export async function sessionsOf(database: TestDatabase, name: string): Promise<number> {
  switch (database.kind) {
    case 'postgres':
      return count(database, `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = ?`, name);
    case 'mariadb':
    case 'mysql':
      return count(database, `SELECT count(*) AS n FROM information_schema.PROCESSLIST WHERE USER = ?`, name);
    case 'sqlite':
      return 0;
  }
}

async function count(database: TestDatabase, text: string, name: string): Promise<number> {
  const [row] = await database.sql<{ n: unknown }>(text, [name]);
  return Number(row.n);
}
