import type { TestDatabase } from '../../test/support/database';
import { MysqlTestDatabase } from '../../test/support/databases/mysql-test-database';
import { MariadbBacklog } from './mariadb-backlog';
import { PostgresBacklog } from './postgres-backlog';

/** What one drain left in the outbox table. */
export interface DrainOutcome {
  done: number;
  total: number;
  /** Milliseconds from just before the backlog's COMMIT to the first claim of its rows (database clock). */
  firstClaimMs: number;
}

/**
 * The dispatch bench's hand on one database's outbox table, through a session of its own:
 * seeds a PENDING backlog as `publish()` would have written it, and watches it drain.
 */
export interface OutboxBacklog {
  /** How other processes' dispatchers learn of the seeded rows: PostgreSQL NOTIFY, or MySQL/MariaDB's look every `wakeupProbeIntervalMs`. */
  readonly wakeup: 'NOTIFY' | 'look';
  /** Empties the table. */
  clear(): Promise<void>;
  /**
   * Inserts `count` PENDING rows with 1 KB JSON payloads routed to `exchange` in one transaction
   * (which wakes the dispatchers where the database can), and commits it. Resolves once the
   * commit did, to `performance.now()` taken just before COMMIT was sent.
   */
  seed(exchange: string, count: number): Promise<number>;
  /** Whether a row is still PENDING, FAILED or PROCESSING. */
  busy(): Promise<boolean>;
  /** Counts the rows after a drain. */
  outcome(): Promise<DrainOutcome>;
  close(): Promise<void>;
}

/** Opens a session on `database`'s outbox table (`outbox_message`, created by the library). */
export async function openOutboxBacklog(database: TestDatabase, sessionName: string): Promise<OutboxBacklog> {
  if (database.kind === 'postgres') return PostgresBacklog.open(database.name, sessionName);
  if (database instanceof MysqlTestDatabase && database.kind === 'mariadb') return MariadbBacklog.open(database);
  throw new Error(`the dispatch bench has no backlog for ${database.kind}`);
}
