import { OutboxError } from '../errors';

/** Invalid `OutboxBoardModule` options, reported at start-up with each offending option's name. */
export class OutboxBoardOptionsError extends OutboxError {
  constructor(
    /** Each offending option with what is wrong with it, one sentence each. */
    readonly problems: string[],
  ) {
    super(`Invalid OutboxBoardModule options: ${problems.join('; ')}`);
  }
}
