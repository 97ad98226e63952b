import { mysqlSchemaSql } from '../dialects/mysql/mysql-schema';
import { describeMysqlServer } from '../dialects/mysql/mysql-server';
import { postgresSchemaSql } from '../dialects/postgres/postgres-schema';
import { SchemaSql } from '../dialects/schema-sql';
import { sqliteSchemaSql } from '../dialects/sqlite/sqlite-schema';
import { tableNameProblem } from '../naming/table-names';
import { CliUsageError } from './cli-usage.error';

/** The databases `sql --dialect` writes for. */
export const DIALECT_NAMES = ['postgres', 'mysql', 'mariadb', 'sqlite'] as const;
export type DialectName = (typeof DIALECT_NAMES)[number];

/**
 * The server assumed without a connection: the current long-term releases, whose capabilities
 * (binary NO PAD collation, expression defaults) every supported version since MySQL 8.0.17 and
 * MariaDB 10.2.1 shares.
 */
const ASSUMED_SERVER_VERSION: Record<'mysql' | 'mariadb', string> = { mysql: '8.4.0', mariadb: '11.4.0-MariaDB' };

/** Where DDL comes from: a database's schema SQL, and how it names a table. */
export interface DdlSource {
  name: DialectName;
  /** For the script's header: the database and server the statements are written for. */
  description: string;
  ddl: SchemaSql;
  /** The table as statements name it: quoted, qualified with the schema when one is given. */
  quoted(table: string): string;
}

/**
 * The DDL of `name` without a connection. Table and schema names are plain identifiers (checked
 * as OutboxModule checks table names), so quoting them needs no escaping.
 */
export function offlineDdlSource(name: DialectName, options: { schema?: string; serverVersion?: string }): DdlSource {
  const schemaProblem = options.schema === undefined ? undefined : tableNameProblem('--schema', options.schema);
  if (schemaProblem) throw new CliUsageError(schemaProblem);
  const quote = name === 'mysql' || name === 'mariadb' ? (identifier: string) => `\`${identifier}\`` : (identifier: string) => `"${identifier}"`;
  const quoted = (table: string) => (options.schema === undefined ? quote(table) : `${quote(options.schema)}.${quote(table)}`);
  if (options.serverVersion !== undefined && name !== 'mysql' && name !== 'mariadb') {
    throw new CliUsageError('--server-version is for --dialect mysql or mariadb: the DDL of the other databases does not depend on the server');
  }
  switch (name) {
    case 'postgres':
      return { name, description: 'PostgreSQL', ddl: postgresSchemaSql, quoted };
    case 'sqlite':
      return { name, description: 'SQLite 3.38 or later', ddl: sqliteSchemaSql, quoted };
    case 'mysql':
    case 'mariadb': {
      const server = describeMysqlServer(serverVersionText(name, options.serverVersion));
      const assumed = options.serverVersion === undefined ? ' (assumed; --server-version or -d for another server)' : '';
      const description = `${name === 'mysql' ? 'MySQL' : 'MariaDB'} ${server.version}${assumed}, collation ${server.collation}`;
      return { name, description, ddl: mysqlSchemaSql(server), quoted };
    }
  }
}

/** The `VERSION()` text of the server to write for: as given (MariaDB's marked as such), or the assumed one. */
function serverVersionText(name: 'mysql' | 'mariadb', given: string | undefined): string {
  if (given === undefined) return ASSUMED_SERVER_VERSION[name];
  if (!/^\d+\.\d+(\.\d+)?/.test(given))
    throw new CliUsageError(`--server-version must be a server version such as 8.0.36 or 10.11.6, got ${JSON.stringify(given)}`);
  const mariadb = /mariadb/i.test(given);
  if (name === 'mysql' && mariadb) throw new CliUsageError(`--server-version ${given} is a MariaDB version: give --dialect mariadb`);
  return name === 'mariadb' && !mariadb ? `${given}-MariaDB` : given;
}
