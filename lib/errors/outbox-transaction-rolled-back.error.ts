import { OutboxError } from './outbox.error';

/**
 * Thrown where the outbox would write in a transaction that the database server has already
 * rolled back while the application still holds it open: `OutboxService.publish()`/`cancel()`,
 * and an inbox handler's transaction before it records the delivery as handled. MySQL and
 * MariaDB (InnoDB) roll back the whole transaction on a deadlock, and on a lock wait timeout
 * with `innodb_rollback_on_timeout`; the error of that statement may be caught and the work go
 * on, but every statement after it runs in autocommit. Writing the message there would send it
 * without the business change it belongs to. Let this error end the transaction and run the
 * whole transaction again.
 */
export class OutboxTransactionRolledBackError extends OutboxError {
  /**
   * @param what what was refused, as the start of a sentence, e.g. `publish()`
   * @param cause the statement's error on which the server rolled the transaction back
   */
  constructor(what: string, cause: unknown) {
    super(
      `${what} refused: the database server already rolled back this transaction (${describeCause(cause)}), so nothing it wrote ` +
        `before stands and anything written now would commit on its own. Do not catch that error and go on: ` +
        `let the transaction fail and retry it as a whole`,
      { cause },
    );
  }
}

function describeCause(cause: unknown): string {
  if (cause instanceof Error) return cause.message.split('\n')[0].slice(0, 200);
  return 'an error of a statement in it';
}
