import { OutboxError } from './outbox.error';

// The errors of options refused at start-up, each naming the option at fault.

/** Invalid module options, reported at start-up with each offending option's name. */
export class OutboxOptionsError extends OutboxError {
  constructor(
    /** Each offending option with what is wrong with it, one sentence each. */
    readonly problems: string[],
  ) {
    super(`Invalid OutboxModule options: ${problems.join('; ')}`);
  }
}

/**
 * Invalid Standard Webhooks settings: a secret that is empty or not base64, no secrets at all, a
 * tolerance that is not positive, or a body, id or timestamp that cannot be signed. Each problem
 * names the option at fault and never repeats a secret. An `OutboxOptionsError`, so one `catch`
 * covers every options mistake the library reports.
 */
export class WebhookOptionsError extends OutboxOptionsError {
  constructor(problems: string[]) {
    super(problems);
    this.message = `Invalid Standard Webhooks options: ${problems.join('; ')}`;
  }
}
