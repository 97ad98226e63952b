import { OutboxError } from './outbox.error';

/**
 * A filter, page or option given to an `OutboxAdmin` operation on many messages that it refuses:
 * a field of the wrong type or size, or a filter too broad for the change asked. Nothing was read
 * or changed.
 */
export class OutboxAdminFilterError extends OutboxError {
  /**
   * The field at fault (`status`, `type`, `bizKey`, `transport`, `consumer`, `errorContains`,
   * `createdAfter`, `createdBefore`, `after`, `limit`, `order`, `batchSize`, or an unknown field's
   * name), or undefined when the filter as a whole is (an empty filter for a change).
   */
  readonly field?: string;

  constructor(reason: string, field?: string) {
    super(`Invalid OutboxAdmin filter: ${reason}`);
    this.field = field;
  }
}
