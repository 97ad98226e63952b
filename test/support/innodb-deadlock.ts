import { Connection, createConnection } from 'mysql2/promise';
import type { EntityManager } from 'typeorm';
import { MysqlTestDatabase } from './databases/mysql-test-database';
import { waitUntil } from './wait';

/** Rows the rival writes before the deadlock: InnoDB rolls back the lighter transaction, and it must be the application's. */
const RIVAL_WEIGHT_ROWS = 200;

/**
 * A session of its own that deadlocks with an application's transaction on MariaDB or MySQL, and
 * makes InnoDB pick the application's transaction as the victim (it has written far more, and
 * InnoDB rolls back the transaction that wrote less). The application's statement fails with
 * ER_LOCK_DEADLOCK (1213) and its whole transaction is rolled back, while TypeORM still holds it
 * open.
 */
export class DeadlockRival {
  private session?: Connection;
  private waiting?: Promise<unknown>;

  private constructor(private readonly database: MysqlTestDatabase) {}

  /** Creates the two tables the deadlock is made on, in `database`. */
  static async prepare(database: MysqlTestDatabase): Promise<void> {
    await database.sql('CREATE TABLE IF NOT EXISTS lock_pair (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB');
    await database.sql('CREATE TABLE IF NOT EXISTS lock_weight (id INT AUTO_INCREMENT PRIMARY KEY, pad VARCHAR(100) NOT NULL) ENGINE=InnoDB');
    await database.sql('INSERT IGNORE INTO lock_pair (id, v) VALUES (1, 0), (2, 0)');
  }

  /**
   * Makes the application's transaction of `manager` lose a deadlock, and returns the error its
   * statement failed with (which the caller caught). Throws if no deadlock happened.
   */
  static async loseDeadlock(database: MysqlTestDatabase, manager: EntityManager): Promise<unknown> {
    const rival = new DeadlockRival(database);
    try {
      await rival.lockSecondRow();
      await manager.query('UPDATE lock_pair SET v = v + 1 WHERE id = 1');
      await rival.waitForFirstRow();
      try {
        await manager.query('UPDATE lock_pair SET v = v + 1 WHERE id = 2');
      } catch (error) {
        if ((error as { errno?: number }).errno === 1213) return error;
        throw error;
      }
      throw new Error('the rival session lost the deadlock, or none happened');
    } finally {
      await rival.end();
    }
  }

  /** Heavy first, then the lock on row 2. */
  private async lockSecondRow(): Promise<void> {
    const { host, port, user, password } = this.database.server;
    this.session = await createConnection({ host, port, user, password, database: this.database.name });
    await this.session.query('START TRANSACTION');
    const rows = Array.from({ length: RIVAL_WEIGHT_ROWS }, (_, i) => [`weight ${i}`]);
    await this.session.query('INSERT INTO lock_weight (pad) VALUES ?', [rows]);
    await this.session.query('UPDATE lock_pair SET v = v + 1 WHERE id = 2');
  }

  /** Asks for row 1, which the application holds, and returns once the server shows it waiting. */
  private async waitForFirstRow(): Promise<void> {
    const [[{ id }]] = (await this.session!.query('SELECT CONNECTION_ID() AS id')) as unknown as [{ id: number }[]];
    this.waiting = this.session!.query('UPDATE lock_pair SET v = v + 1 WHERE id = 1').catch((error: unknown) => error);
    await waitUntil(async () => {
      const rows = await this.database.sql(`SELECT trx_state FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = ?`, [id]);
      return rows[0]?.trx_state === 'LOCK WAIT';
    }, 'the rival session waits for the row the application holds');
  }

  private async end(): Promise<void> {
    await this.waiting;
    await this.session?.query('ROLLBACK').catch(() => undefined);
    await this.session?.end().catch(() => undefined);
  }
}
