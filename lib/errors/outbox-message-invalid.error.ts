import { OutboxError } from './outbox.error';

/** A message given to `publish()` that cannot be stored or sent as it is. Nothing was written. */
export class OutboxMessageInvalidError extends OutboxError {
  constructor(reason: string) {
    super(`Invalid outbox message: ${reason}`);
  }
}
