import { OutboxError } from './outbox.error';

// The errors of a publish() or an inbox handler whose transaction is not open for its writes.

/**
 * Thrown by `OutboxService.publish()`/`cancel()` when no transaction is active. Writing the row in
 * auto-commit would reintroduce the ghost/lost message problem the outbox exists to solve.
 */
export class OutboxOutsideTransactionError extends OutboxError {
  constructor(operation: string) {
    super(
      `${operation}() needs an active transaction; call it inside a @Transactional() method ` +
        `(or TransactionHost.withTransaction()), or pass { manager } from an open transaction`,
    );
  }
}

/**
 * How the server ended a transaction the application still holds open: the error of the
 * statement on which it rolled the transaction back, or the statement after which it reported
 * no transaction open.
 */
export type ServerTransactionEnding =
  | {
      /** The failed statement's error (InnoDB's deadlock, for one). */
      error: unknown;
    }
  | {
      /** The statement after which the server reported no transaction open (a raw `COMMIT`, DDL). */
      statement: string;
    };

/**
 * Thrown where the outbox would write in a transaction that the database server has already
 * ended while the application still holds it open: `OutboxService.publish()`/`cancel()`, and an
 * inbox handler's transaction before it records the delivery as handled. MySQL and MariaDB
 * (InnoDB) roll back the whole transaction on a deadlock, and on a lock wait timeout with
 * `innodb_rollback_on_timeout`; the error of that statement may be caught and the work go on,
 * but every statement after it runs in autocommit (so does every statement after a raw `COMMIT`
 * or an implicit commit). Writing the message there would send it without the business change
 * it belongs to. Let this error end the transaction and run the whole transaction again.
 */
export class OutboxTransactionRolledBackError extends OutboxError {
  /**
   * @param what what was refused, as the start of a sentence, e.g. `publish()`
   * @param ending how the server ended the transaction
   */
  constructor(what: string, ending: ServerTransactionEnding) {
    super(
      'error' in ending
        ? `${what} refused: the database server already rolled back this transaction (${firstLine(ending.error)}), so nothing it ` +
            `wrote before stands and anything written now would commit on its own. Do not catch that error and go on: ` +
            `let the transaction fail and retry it as a whole`
        : `${what} refused: the database server has no transaction open since the statement ${JSON.stringify(ending.statement.slice(0, 100))} ` +
            `(a raw COMMIT or ROLLBACK, or one that commits implicitly such as DDL), so anything written now would commit on its own. ` +
            `End transactions only through TypeORM (or @Transactional()), and retry the transaction as a whole`,
      'error' in ending ? { cause: ending.error } : undefined,
    );
  }
}

function firstLine(error: unknown): string {
  if (error instanceof Error) return error.message.split('\n')[0].slice(0, 200);
  return 'an error of a statement in it';
}
