/** InnoDB's errors after which the server has rolled back the whole transaction, not only the statement. */
const ER_LOCK_DEADLOCK = 1213;
const ER_LOCK_WAIT_TIMEOUT = 1205;
const ER_LOCK_TABLE_FULL = 1206;

/** The status flag of the server's OK packet that says a transaction is open. */
const SERVER_STATUS_IN_TRANS = 0x0001;

/**
 * Whether `error`, a failed statement's (mysql2's, or TypeORM's wrapper of it), tells that InnoDB
 * rolled back the transaction around the statement: a deadlock, a full lock table, and a lock
 * wait timeout where the server runs with `innodb_rollback_on_timeout` (otherwise only the
 * statement is undone and the transaction goes on). The connection stays, and later statements
 * run in autocommit.
 */
export function rollsBackMysqlTransaction(error: unknown, rollbackOnTimeout: boolean): boolean {
  const errno = errnoOf(error) ?? errnoOf((error as { driverError?: unknown } | null)?.driverError);
  return errno === ER_LOCK_DEADLOCK || errno === ER_LOCK_TABLE_FULL || (errno === ER_LOCK_WAIT_TIMEOUT && rollbackOnTimeout);
}

/**
 * Whether `raw`, what mysql2 returned for a statement that succeeded, says that no transaction is
 * open after it: the status flags of the server's OK packet (statements that return rows carry
 * none here, and tell nothing). Inside a transaction only a statement that ended it answers so:
 * a raw `COMMIT` or `ROLLBACK`, one that commits implicitly (DDL, `LOCK TABLES`...), or any
 * statement run in autocommit after the server rolled the transaction back.
 */
export function mysqlReportsNoTransaction(raw: unknown): boolean {
  const status = (raw as { serverStatus?: unknown } | null | undefined)?.serverStatus;
  return typeof status === 'number' && (status & SERVER_STATUS_IN_TRANS) === 0;
}

function errnoOf(error: unknown): number | undefined {
  const errno = (error as { errno?: unknown } | null | undefined)?.errno;
  return typeof errno === 'number' ? errno : undefined;
}
