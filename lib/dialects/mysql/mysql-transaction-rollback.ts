/** InnoDB's errors after which the server has rolled back the whole transaction, not only the statement. */
const ER_LOCK_DEADLOCK = 1213;
const ER_LOCK_WAIT_TIMEOUT = 1205;
const ER_LOCK_TABLE_FULL = 1206;

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

function errnoOf(error: unknown): number | undefined {
  const errno = (error as { errno?: unknown } | null | undefined)?.errno;
  return typeof errno === 'number' ? errno : undefined;
}
