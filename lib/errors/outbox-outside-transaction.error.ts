import { OutboxError } from './outbox.error';

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
