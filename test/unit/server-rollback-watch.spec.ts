import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { OutboxTransactionRolledBackError } from '../../lib';
import { describeMysqlServer } from '../../lib/dialects/mysql/mysql-server';
import { MysqlDialect } from '../../lib/dialects/mysql/mysql.dialect';
import { ServerRollbackWatch } from '../../lib/dialects/server-rollback-watch';

/** A query runner as the watch sees it, driven through TypeORM's events the way MysqlQueryRunner sends them. */
class FakeRunner {
  isTransactionActive = false;
  transactionDepth = 0;
  constructor(private readonly watch: ServerRollbackWatch) {}

  get manager(): EntityManager {
    return { queryRunner: this } as unknown as EntityManager;
  }
  private event(extra: object) {
    return { queryRunner: this as unknown as QueryRunner, ...extra } as never;
  }
  ok(query: string, inTransaction = this.isTransactionActive): void {
    this.watch.afterQuery(this.event({ query, success: true, rawResults: { affectedRows: 0, serverStatus: inTransaction ? 3 : 2 } }));
  }
  rows(query: string): void {
    this.watch.afterQuery(this.event({ query, success: true, rawResults: [] }));
  }
  fail(query: string, errno: number): void {
    this.watch.afterQuery(this.event({ query, success: false, error: Object.assign(new Error(`errno ${errno}`), { errno }) }));
  }
  start(isolation = false): void {
    this.isTransactionActive = true;
    if (this.transactionDepth === 0) {
      if (isolation) this.ok('SET TRANSACTION ISOLATION LEVEL READ COMMITTED', false);
      this.ok('START TRANSACTION', true);
    } else this.ok(`SAVEPOINT typeorm_${this.transactionDepth}`);
    this.transactionDepth++;
    this.watch.afterTransactionStart(this.event({}));
  }
  commit(): void {
    if (this.transactionDepth > 1) this.ok(`RELEASE SAVEPOINT typeorm_${this.transactionDepth - 1}`);
    else {
      this.ok('COMMIT', false);
      this.isTransactionActive = false;
    }
    this.transactionDepth--;
    this.watch.afterTransactionCommit(this.event({}));
  }
  rollback(): void {
    this.ok('ROLLBACK', false);
    this.isTransactionActive = false;
    this.transactionDepth = 0;
    this.watch.afterTransactionRollback(this.event({}));
  }
}

describe('ServerRollbackWatch', () => {
  const dataSource = () => ({ subscribers: [] as unknown[] }) as unknown as DataSource;
  const setUp = (rollbackOnTimeout = false) => {
    const watch = new ServerRollbackWatch(dataSource(), new MysqlDialect(describeMysqlServer('10.11.19-MariaDB', rollbackOnTimeout)));
    return { watch, runner: new FakeRunner(watch) };
  };
  const refuses = (watch: ServerRollbackWatch, runner: FakeRunner) => {
    try {
      watch.assertNotRolledBack(runner.manager, 'publish()');
      return false;
    } catch (error) {
      if (error instanceof OutboxTransactionRolledBackError) return true;
      throw error;
    }
  };

  it('lets a transaction go on through statements, savepoints and errors that undo the statement only', () => {
    const { watch, runner } = setUp();
    runner.start(true);
    runner.ok('INSERT INTO t VALUES (1)');
    runner.rows('SELECT 1');
    runner.fail('INSERT INTO t VALUES (1)', 1062);
    runner.fail('UPDATE t SET v = 1', 1205);
    runner.start();
    runner.commit();
    expect(refuses(watch, runner)).toBe(false);
  });

  it('refuses after a deadlock until the outermost transaction ends, savepoints and later statements included', () => {
    const { watch, runner } = setUp();
    runner.start();
    runner.fail('UPDATE t SET v = 1', 1213);
    runner.ok('INSERT INTO t VALUES (2)');
    runner.start();
    expect(refuses(watch, runner)).toBe(true);
    runner.commit();
    expect(refuses(watch, runner)).toBe(true);
    runner.commit();
    runner.start();
    expect(refuses(watch, runner)).toBe(false);
  });

  it('counts a lock wait timeout where the server rolls back on it', () => {
    const { watch, runner } = setUp(true);
    runner.start();
    runner.fail('UPDATE t SET v = 1', 1205);
    expect(refuses(watch, runner)).toBe(true);
    runner.rollback();
    expect(refuses(watch, runner)).toBe(false);
  });

  it('refuses after a statement the server answered with no transaction open', () => {
    const { watch, runner } = setUp();
    runner.start();
    runner.ok('COMMIT', false);
    expect(refuses(watch, runner)).toBe(true);
    expect(() => watch.assertNotRolledBack(runner.manager, 'publish()')).toThrow(/no transaction open since the statement "COMMIT"/);
  });

  it('does not listen where the dialect tells nothing (SQLite)', () => {
    const source = dataSource();
    new ServerRollbackWatch(source, {} as never);
    expect(source.subscribers).toHaveLength(0);
  });
});
