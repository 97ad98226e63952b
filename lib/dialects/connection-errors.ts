/*
 * Whether a database error says the database could not be reached or could not serve the
 * statement, as opposed to refusing what the statement carried. The three drivers as TypeORM
 * wraps them: pg, mysql2 (MySQL, MariaDB) and better-sqlite3. TypeORM's QueryFailedError copies
 * the driver error's fields onto itself and keeps it as `driverError`; pool and socket errors
 * arrive unwrapped; either may sit on a `cause` chain.
 */

/** Socket-level failures, as Node reports them on the error's `code`. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * PostgreSQL SQLSTATEs of a lost or refused session: class 08 (connection exception), the
 * server shutting down or refusing connections (57P01 admin shutdown, also `pg_terminate_backend`;
 * 57P02 crash shutdown; 57P03 cannot connect now), class 53 (insufficient resources: disk full,
 * out of memory, too many connections), 58 (system error, e.g. an I/O error), and a server that
 * takes no writes (25006, a standby during a failover).
 */
function isPostgresUnavailable(code: string): boolean {
  return /^(08|53|58)[0-9A-Z]{3}$/.test(code) || ['57P01', '57P02', '57P03', '25006'].includes(code);
}

/** mysql2 and server error codes of a lost, refused or read-only (failed-over) session. */
const MYSQL_CODES = new Set([
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'PROTOCOL_ENQUEUE_AFTER_QUIT',
  'PROTOCOL_ENQUEUE_HANDSHAKE_TWICE',
  'ER_CON_COUNT_ERROR',
  'ER_TOO_MANY_USER_CONNECTIONS',
  'ER_SERVER_SHUTDOWN',
  'ER_CONNECTION_KILLED',
  'ER_NET_READ_ERROR',
  'ER_NET_READ_INTERRUPTED',
  'ER_NET_WRITE_INTERRUPTED',
  'ER_NET_ERROR_ON_WRITE',
  'ER_CLIENT_INTERACTION_TIMEOUT',
  'ER_OPTION_PREVENTS_STATEMENT',
  'ER_READ_ONLY_TRANSACTION',
  'CR_SERVER_GONE_ERROR',
  'CR_SERVER_LOST',
  'CR_CONNECTION_ERROR',
  'CR_CONN_HOST_ERROR',
]);

/** better-sqlite3 result codes (extended codes start with the primary one) of a file that cannot be used. */
const SQLITE_PREFIXES = ['SQLITE_IOERR', 'SQLITE_CANTOPEN', 'SQLITE_FULL', 'SQLITE_READONLY', 'SQLITE_NOTADB', 'SQLITE_CORRUPT', 'SQLITE_NOMEM'];

/** Messages of errors that carry no code: pg's client and pool, better-sqlite3 on a closed handle. */
const UNAVAILABLE_MESSAGES = [
  /connection terminated/i,
  /client has encountered a connection error/i,
  /client was closed and is not queryable/i,
  /cannot use a pool after calling end/i,
  /timeout exceeded when trying to connect/i,
  /query read timeout/i,
  /can't add new command when connection is in closed state/i,
  /connection is closed/i,
  /database connection is not open/i,
];

/** TypeORM's own errors of a DataSource or query runner that cannot run statements, and a statement that passed `statementTimeoutMs`. */
const TYPEORM_UNAVAILABLE = new Set(['ConnectionIsNotSetError', 'CannotExecuteNotConnectedError', 'QueryRunnerAlreadyReleasedError', 'DatabaseTimeoutError']);

const MAX_DEPTH = 8;

/**
 * True when `error` (or anything on its `cause` / `driverError` chain) says the database is
 * unreachable or cannot serve statements right now: a refused or dropped connection, a server
 * shutting down, exhausted connections or resources, an unusable SQLite file. False for errors
 * about the statement or its data (constraint and data exceptions, syntax), which retrying the
 * same statement will not cure.
 */
export function isConnectionError(error: unknown): boolean {
  return someOnChain(error, (e) => {
    const code = typeof e.code === 'string' ? e.code : undefined;
    if (code !== undefined) {
      if (NETWORK_CODES.has(code) || MYSQL_CODES.has(code) || isPostgresUnavailable(code)) return true;
      if (SQLITE_PREFIXES.some((prefix) => code.startsWith(prefix))) return true;
    }
    // mysql2 marks errors after which its connection is unusable.
    if (e.fatal === true) return true;
    if (typeof e.name === 'string' && TYPEORM_UNAVAILABLE.has(e.name)) return true;
    return typeof e.message === 'string' && UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(e.message as string));
  });
}

/**
 * True when `error` is a lock conflict that a later retry of the same statement resolves: a
 * deadlock, a serialization failure, a lock wait timeout, a busy SQLite file.
 */
export function isTransientConflict(error: unknown): boolean {
  return someOnChain(error, (e) => {
    const code = typeof e.code === 'string' ? e.code : undefined;
    if (code === undefined) return false;
    return (
      code === '40001' || // PostgreSQL serialization_failure
      code === '40P01' || // PostgreSQL deadlock_detected
      code === '55P03' || // PostgreSQL lock_not_available (lock_timeout)
      code === 'ER_LOCK_DEADLOCK' ||
      code === 'ER_LOCK_WAIT_TIMEOUT' ||
      code.startsWith('SQLITE_BUSY') ||
      code.startsWith('SQLITE_LOCKED')
    );
  });
}

type ErrorFields = { code?: unknown; fatal?: unknown; name?: unknown; message?: unknown; cause?: unknown; driverError?: unknown };

function someOnChain(error: unknown, test: (e: ErrorFields) => boolean): boolean {
  const seen = new Set<unknown>();
  const pending: unknown[] = [error];
  while (pending.length > 0 && seen.size < MAX_DEPTH) {
    const current = pending.shift();
    if (current === null || typeof current !== 'object' || seen.has(current)) continue;
    seen.add(current);
    const fields = current as ErrorFields;
    if (test(fields)) return true;
    pending.push(fields.driverError, fields.cause);
  }
  return false;
}
