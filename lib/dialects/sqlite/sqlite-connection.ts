import type BetterSqlite3 from 'better-sqlite3';
import { DataSource } from 'typeorm';
import type { BetterSqlite3Driver } from 'typeorm/driver/better-sqlite3/BetterSqlite3Driver';
import { OutboxError } from '../../errors';
import { RawSqliteStatements, SqliteStatements } from './sqlite-statements';
import { SqliteTransactionGate } from './sqlite-transaction-gate';
import { TransactionListener, transactionSubscriberOf } from '../transaction-subscriber';

/** First pause while the connection is inside a transaction (or the file is locked); doubles up to the max. */
const FIRST_RETRY_DELAY_MS = 2;
const MAX_RETRY_DELAY_MS = 50;
/**
 * Longest a statement waits for the connection to leave a transaction. Bounded because a
 * statement issued from inside that very transaction (e.g. a handler asking the DataSource for
 * a message's state) would otherwise wait for ever.
 */
const MAX_WAIT_MS = 30_000;

const connections = new WeakMap<DataSource, SqliteConnection>();

/** The one connection of a better-sqlite3 DataSource, shared by every dialect and table on it. */
export function sqliteConnectionOf(dataSource: DataSource): SqliteConnection {
  let connection = connections.get(dataSource);
  if (!connection) {
    connection = new SqliteConnection(dataSource);
    connections.set(dataSource, connection);
  }
  return connection;
}

/**
 * TypeORM runs everything of a better-sqlite3 DataSource on ONE connection: every query runner
 * is the same object, and a second transaction while one is open becomes a savepoint inside it.
 * A statement meant to run outside any transaction (claims, settles after sending, release,
 * maintenance) would, sent through TypeORM while the application has a transaction open, run
 * inside it: the dispatcher could send a row that is later rolled back, or lose its claim with
 * the application's rollback. So such work runs here instead, synchronously on the raw
 * better-sqlite3 connection, in a tick where that connection is not inside a transaction
 * (better-sqlite3 is synchronous: nothing interleaves between the check and the statements).
 * While a transaction is open it waits and tries again, at once when a TypeORM transaction
 * ends, and by polling as a backstop.
 *
 * Several processes may share one file: SQLite serialises their writers, each waiting up to
 * the busy timeout (TypeORM's `timeout` option); a statement still refused as busy is tried
 * again shortly. WAL mode (`enableWAL`) lets readers and the writer proceed side by side.
 */
export class SqliteConnection {
  /** Work waiting for the connection to leave a transaction: each entry tries it once more. */
  private readonly waiting = new Set<() => void>();
  private readonly statements: RawSqliteStatements;
  /** The library's own transactions on this connection, one at a time. */
  readonly transactionGate = new SqliteTransactionGate();
  /** Retries waiting work the moment a TypeORM transaction ends (a released savepoint leaves it open: the work checks). */
  private readonly onTransactionEnd: TransactionListener = {
    afterTransactionCommit: () => this.resumeWaiting(),
    afterTransactionRollback: () => this.resumeWaiting(),
  };

  constructor(private readonly dataSource: DataSource) {
    this.statements = new RawSqliteStatements(dataSource);
  }

  /** The raw better-sqlite3 connection TypeORM opened (replaced when the DataSource reconnects). */
  get database(): BetterSqlite3.Database {
    const database = (this.dataSource.driver as BetterSqlite3Driver).databaseConnection as BetterSqlite3.Database | undefined;
    if (!database) throw new OutboxError('the better-sqlite3 DataSource is not initialized');
    return database;
  }

  /** The SQLite library's version, e.g. `3.53.2`. */
  version(): string {
    return (this.database.prepare('SELECT sqlite_version() AS version').get() as { version: string }).version;
  }

  /**
   * Runs `work` synchronously on the raw connection, at a moment when no transaction is open on
   * it, so that it commits on its own whatever the application's transactions do. It starts in a
   * later turn of the event loop, as a statement sent to a database server would: a loop of
   * synchronous statements would otherwise keep network I/O (broker acks, heartbeats) waiting.
   */
  outsideTransaction<T>(work: (statements: SqliteStatements) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const since = Date.now();
      let delayMs = FIRST_RETRY_DELAY_MS;
      let timer: NodeJS.Timeout | undefined;
      const attempt = () => {
        clearTimeout(timer);
        this.waiting.delete(attempt);
        let database: BetterSqlite3.Database;
        try {
          database = this.database;
        } catch (error) {
          return reject(error);
        }
        let busy: unknown;
        if (!database.inTransaction) {
          try {
            resolve(work(this.statements.on(database)));
            return;
          } catch (error) {
            if (!isBusy(error)) return reject(error);
            busy = error;
          }
        }
        if (Date.now() - since >= MAX_WAIT_MS) {
          const stuck = new OutboxError(
            `the SQLite connection stayed inside a transaction for ${MAX_WAIT_MS} ms, and this statement must run outside it (was it issued from inside that transaction?)`,
          );
          // The busy error as caught, when there was one; else why this statement stopped waiting.
          const reason: unknown = busy ?? stuck;
          return reject(reason);
        }
        // Busy means another process holds the file: only time helps, not a local commit.
        if (!busy) this.waitForTransactionEnd(attempt);
        timer = setTimeout(attempt, delayMs);
        delayMs = Math.min(delayMs * 2, MAX_RETRY_DELAY_MS);
      };
      setImmediate(attempt);
    });
  }

  private waitForTransactionEnd(attempt: () => void): void {
    this.waiting.add(attempt);
    // Each time: initializing the DataSource again replaces its subscribers; listening again puts ours back.
    transactionSubscriberOf(this.dataSource).listen('sqlite-connection', this.onTransactionEnd);
  }

  private resumeWaiting(): void {
    for (const attempt of [...this.waiting]) attempt();
  }
}

/** SQLITE_BUSY and its extended codes: another connection holds the lock past the busy timeout. */
function isBusy(error: unknown): boolean {
  const code = (error as { driverError?: { code?: unknown } }).driverError?.code ?? (error as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}
