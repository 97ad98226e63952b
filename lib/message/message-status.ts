/** States of an outbox (and inbox) row. See the state machine in README.md. */
export enum MessageStatus {
  PENDING = 'PENDING',
  PROCESSING = 'PROCESSING',
  DONE = 'DONE',
  FAILED = 'FAILED',
  MANUAL_REQUIRED = 'MANUAL_REQUIRED',
  ABANDONED = 'ABANDONED',
}

/** Rows a dispatcher may claim (once `next_attempt_at` has passed). */
export const CLAIMABLE_STATUSES = [MessageStatus.PENDING, MessageStatus.FAILED] as const;

/** Rows not finished yet: such a row holds back the later rows of its ordering key. */
export const UNFINISHED_STATUSES = [MessageStatus.PENDING, MessageStatus.PROCESSING, MessageStatus.FAILED, MessageStatus.MANUAL_REQUIRED] as const;
