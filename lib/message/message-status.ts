/** States of an outbox (and inbox) row. See the state machine in docs/semantics.md. */
export enum MessageStatus {
  /** Waiting to be claimed once `next_attempt_at` has passed; no failed attempt yet. */
  PENDING = 'PENDING',
  /** Claimed by an instance, which is sending (outbox) or handling (deferred inbox) it. */
  PROCESSING = 'PROCESSING',
  /** Sent (the transport acknowledged it) or handled: finished. */
  DONE = 'DONE',
  /** A failed attempt; claimed again once its backoff (`next_attempt_at`) has passed. */
  FAILED = 'FAILED',
  /** Given up on (a fatal error, or `maxAttempts` reached): waits for an operator to requeue or abandon it. */
  MANUAL_REQUIRED = 'MANUAL_REQUIRED',
  /** Cancelled before it was sent or processed; never will be. */
  ABANDONED = 'ABANDONED',
}

/** Rows a dispatcher may claim (once `next_attempt_at` has passed). */
export const CLAIMABLE_STATUSES = [MessageStatus.PENDING, MessageStatus.FAILED] as const;

/** Rows not finished yet: such a row holds back the later rows of its ordering key. */
export const UNFINISHED_STATUSES = [MessageStatus.PENDING, MessageStatus.PROCESSING, MessageStatus.FAILED, MessageStatus.MANUAL_REQUIRED] as const;
