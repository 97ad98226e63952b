import { INestApplicationContext } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { OutboxMessage, OutboxService } from '../../lib';

export interface PublishManyOptions {
  /** Messages per transaction. */
  perTransaction?: number;
  /**
   * Transactions open at once. One on SQLite, whatever is asked: TypeORM runs a process's SQLite
   * transactions on its one connection, where a second would become a savepoint of the first.
   */
  parallel?: number;
  /** Runs inside each transaction after its messages were published (e.g. to alter the rows). */
  beforeCommit?: (manager: EntityManager, messageIds: string[]) => Promise<void>;
}

/**
 * Publishes `count` messages through `app`'s OutboxService, `perTransaction` per committed
 * transaction, and returns their message ids in publishing order of their transactions.
 */
export async function publishMany(
  app: INestApplicationContext,
  count: number,
  message: (n: number) => OutboxMessage,
  options: PublishManyOptions = {},
): Promise<string[]> {
  const outbox = app.get(OutboxService);
  const dataSource = app.get(DataSource);
  const { perTransaction = 100 } = options;
  const parallel = dataSource.options.type === 'better-sqlite3' ? 1 : (options.parallel ?? 1);
  const ids: string[] = [];
  let next = 0;
  const publisher = async () => {
    while (next < count) {
      const first = next;
      const end = Math.min(first + perTransaction, count);
      next = end;
      const written = await dataSource.transaction(async (manager) => {
        const batch: string[] = [];
        for (let n = first; n < end; n++) {
          const result = await outbox.publish(message(n), { manager });
          if (result.duplicate) throw new Error(`message ${n} was reported as a duplicate`);
          batch.push(result.messageId);
        }
        await options.beforeCommit?.(manager, batch);
        return batch;
      });
      ids.push(...written);
    }
  };
  await Promise.all(Array.from({ length: parallel }, publisher));
  return ids;
}
