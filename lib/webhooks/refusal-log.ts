import { Logger } from '@nestjs/common';

/** How many refusals a window logs line by line; the rest are counted, and the count logged once. */
const LINES_PER_WINDOW = 10;
const WINDOW_MS = 60_000;

/**
 * The log of refused webhook requests: one WARN line per refusal, with its status and reason,
 * at most `LINES_PER_WINDOW` a minute. A flood of bad requests (a sender with a wrong secret
 * retrying, a scan) must not flood the log or cost its disk: past the limit, refusals are only
 * counted, and the first refusal of a later window says how many went unlogged.
 */
export class RefusalLog {
  private windowStartedAt = -Infinity;
  private logged = 0;
  private unlogged = 0;

  constructor(
    private readonly logger: Logger,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Logs that `who` refused a request with `status`, for `reason` (already made printable), unless the window's lines are spent. */
  refused(who: string, status: number, reason: string): void {
    const now = this.now();
    if (now - this.windowStartedAt >= WINDOW_MS) {
      if (this.unlogged > 0) this.logger.warn(`${this.unlogged} more webhook request(s) were refused in the last minute, not logged one by one`);
      this.windowStartedAt = now;
      this.logged = 0;
      this.unlogged = 0;
    }
    if (this.logged >= LINES_PER_WINDOW) {
      this.unlogged += 1;
      return;
    }
    this.logged += 1;
    const quieting =
      this.logged === LINES_PER_WINDOW ? ` (${LINES_PER_WINDOW} refusals this minute: further ones are counted, not logged, until the next)` : '';
    this.logger.warn(`${who} refused a request with ${status}, nothing stored: ${reason}${quieting}`);
  }
}

/** The process's refusal log: refusals of the guard and of every outbox's intake share one budget. */
export const WEBHOOK_REFUSALS = new RefusalLog(new Logger('WebhookInbox'));
