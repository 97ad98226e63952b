import type { QueryRunner } from 'typeorm';

/**
 * Whether the session of `runner` has no transaction open, as the server said in its last
 * ReadyForQuery message (`I`: idle; `T`: in a transaction; `E`: in a failed one), which node-postgres
 * keeps (`Client.getTransactionStatus()`, pg 8.19+). Inside a transaction only a statement that
 * ended it leaves the session idle: a raw `COMMIT` or `ROLLBACK` sent through the query runner.
 * False where the driver does not tell.
 */
export function postgresReportsNoTransaction(runner: QueryRunner): boolean {
  const client = (runner as unknown as { databaseConnection?: { getTransactionStatus?: () => unknown } }).databaseConnection;
  return typeof client?.getTransactionStatus === 'function' && client.getTransactionStatus() === 'I';
}
