import type { QueryRunner } from 'typeorm';
import { mysqlReportsNoTransaction, rollsBackMysqlTransaction } from '../../lib/dialects/mysql/mysql-transaction-state';
import { postgresReportsNoTransaction } from '../../lib/dialects/postgres/postgres-transaction-state';

describe('rollsBackMysqlTransaction', () => {
  const driverError = (errno: number) => Object.assign(new Error(`error ${errno}`), { errno });

  it('knows the errors on which InnoDB rolls back the whole transaction', () => {
    expect(rollsBackMysqlTransaction(driverError(1213), false)).toBe(true);
    expect(rollsBackMysqlTransaction(driverError(1206), false)).toBe(true);
    // TypeORM's QueryFailedError keeps the driver's error.
    expect(rollsBackMysqlTransaction({ driverError: driverError(1213) }, false)).toBe(true);
  });

  it('counts a lock wait timeout only where the server rolls back on it', () => {
    expect(rollsBackMysqlTransaction(driverError(1205), false)).toBe(false);
    expect(rollsBackMysqlTransaction(driverError(1205), true)).toBe(true);
  });

  it('leaves the transaction open on errors that undo the statement only', () => {
    for (const errno of [1062, 1146, 1406, 1452, 3024]) expect(rollsBackMysqlTransaction(driverError(errno), true)).toBe(false);
    for (const error of [undefined, null, 'text', new Error('no errno'), { errno: '1213' }]) expect(rollsBackMysqlTransaction(error, true)).toBe(false);
  });
});

describe('mysqlReportsNoTransaction', () => {
  it('reads the in-transaction flag of an OK packet', () => {
    expect(mysqlReportsNoTransaction({ affectedRows: 1, serverStatus: 0x0003 })).toBe(false);
    expect(mysqlReportsNoTransaction({ affectedRows: 1, serverStatus: 0x0002 })).toBe(true);
    expect(mysqlReportsNoTransaction({ affectedRows: 0, serverStatus: 0x2001 })).toBe(false);
  });

  it('tells nothing from results without status flags (rows)', () => {
    for (const raw of [[], [{ a: 1 }], undefined, null, { serverStatus: '2' }]) expect(mysqlReportsNoTransaction(raw)).toBe(false);
  });
});

describe('postgresReportsNoTransaction', () => {
  const runner = (status: unknown) => ({ databaseConnection: { getTransactionStatus: () => status } }) as unknown as QueryRunner;

  it("reads node-postgres's transaction status of the last ReadyForQuery", () => {
    expect(postgresReportsNoTransaction(runner('I'))).toBe(true);
    expect(postgresReportsNoTransaction(runner('T'))).toBe(false);
    // A failed transaction: PostgreSQL refuses every statement until it ends.
    expect(postgresReportsNoTransaction(runner('E'))).toBe(false);
  });

  it('tells nothing where the driver does not', () => {
    expect(postgresReportsNoTransaction(runner(null))).toBe(false);
    expect(postgresReportsNoTransaction({ databaseConnection: {} } as unknown as QueryRunner)).toBe(false);
    expect(postgresReportsNoTransaction({} as unknown as QueryRunner)).toBe(false);
  });
});
