import { OutboxError } from './outbox.error';

/**
 * The library's tables are not there, or not of the library's shape, at start-up. Each problem
 * names the table and how to mend it.
 */
export class OutboxSchemaError extends OutboxError {
  constructor(
    /** Each problem, naming the table and how to mend it. */
    readonly problems: string[],
  ) {
    super(`The outbox tables are not ready: ${problems.join('; ')}`);
  }
}
