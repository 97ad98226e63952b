import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { createMysqlDialect } from '../../lib/dialects/mysql/mysql.dialect';
import { describeMysqlServer } from '../../lib/dialects/mysql/mysql-server';

describe('describeMysqlServer', () => {
  it('finds SKIP LOCKED on MariaDB 10.6+ and MySQL 8.0.1+ only', () => {
    const skipLocked = (version: string) => describeMysqlServer(version).skipLocked;
    expect(skipLocked('10.11.19-MariaDB-0+deb12u1')).toBe(true);
    expect(skipLocked('10.6.0-MariaDB')).toBe(true);
    expect(skipLocked('11.4.2-MariaDB')).toBe(true);
    expect(skipLocked('10.5.23-MariaDB-log')).toBe(false);
    expect(skipLocked('8.0.36')).toBe(true);
    expect(skipLocked('8.0.1')).toBe(true);
    expect(skipLocked('8.0.0-dmr')).toBe(false);
    expect(skipLocked('5.7.44-log')).toBe(false);
    expect(skipLocked('8.4.3')).toBe(true);
  });

  it('tells MariaDB from MySQL, and picks a binary collation and expression defaults per version', () => {
    expect(describeMysqlServer('10.11.19-MariaDB-0+deb12u1')).toEqual({
      flavor: 'mariadb',
      version: '10.11.19',
      skipLocked: true,
      lockingOf: false,
      collation: 'utf8mb4_nopad_bin',
      expressionDefaults: true,
      rollbackOnTimeout: false,
    });
    expect(describeMysqlServer('8.0.36')).toEqual({
      flavor: 'mysql',
      version: '8.0.36',
      skipLocked: true,
      lockingOf: true,
      collation: 'utf8mb4_0900_bin',
      expressionDefaults: true,
      rollbackOnTimeout: false,
    });
    expect(describeMysqlServer('5.7.44')).toMatchObject({ flavor: 'mysql', lockingOf: false, collation: 'utf8mb4_bin', expressionDefaults: false });
    expect(describeMysqlServer('8.0.16')).toMatchObject({ collation: 'utf8mb4_bin', expressionDefaults: true });
  });
});

describe('createMysqlDialect', () => {
  const serverSaying = (version: string) => ({ query: async () => [{ version }] }) as unknown as DataSource;

  afterEach(() => jest.restoreAllMocks());

  it('claims with SKIP LOCKED where the server has it, silently', async () => {
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    expect((await createMysqlDialect(serverSaying('10.11.19-MariaDB'))).description).toBe('mariadb 10.11.19 (SKIP LOCKED)');
    expect(log).not.toHaveBeenCalled();
  });

  it('falls back to conditional UPDATEs on older servers, and logs which claim it uses', async () => {
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    expect((await createMysqlDialect(serverSaying('10.5.23-MariaDB'))).description).toBe('mariadb 10.5.23 (conditional-update)');
    expect((await createMysqlDialect(serverSaying('5.7.44'))).description).toBe('mysql 5.7.44 (conditional-update)');
    expect(log).toHaveBeenCalledTimes(2);
    expect(log.mock.calls[0][0]).toMatch(/mariadb 10\.5\.23 has no SKIP LOCKED .*conditional UPDATEs/);
  });
});
