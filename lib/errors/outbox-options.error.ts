import { OutboxError } from './outbox.error';

/** Invalid module options, reported at start-up with each offending option's name. */
export class OutboxOptionsError extends OutboxError {
  constructor(
    /** Each offending option with what is wrong with it, one sentence each. */
    readonly problems: string[],
  ) {
    super(`Invalid OutboxModule options: ${problems.join('; ')}`);
  }
}
