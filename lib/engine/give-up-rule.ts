import { MessageStatus } from '../message/message-status';

const { FAILED, MANUAL_REQUIRED } = MessageStatus;

/** The status a failed attempt leaves a row in: retried later, or given up on. */
export type FailedStatus = MessageStatus.FAILED | MessageStatus.MANUAL_REQUIRED;

/**
 * The give-up rule: a failure that is fatal, or one that leaves the row with as many used
 * attempts as its `max_attempts`, gives the row up (MANUAL_REQUIRED); any other is retried
 * (FAILED). `usedAttempts` counts the attempt being judged.
 */
export function failedStatus(usedAttempts: number, maxAttempts: number, fatal = false): FailedStatus {
  return fatal || usedAttempts >= maxAttempts ? MANUAL_REQUIRED : FAILED;
}

/** The operands of the give-up rule in SQL: expressions (columns, parameters) a statement reads. */
export interface GiveUpOperands {
  /** The used attempts, the judged one included. */
  usedAttempts: string;
  maxAttempts: string;
  /** A boolean expression; absent where the failure cannot be fatal. */
  fatal?: string;
}

/**
 * The give-up rule as an SQL condition, true where `failedStatus` is MANUAL_REQUIRED. The operands
 * appear in the order fatal, used attempts, max attempts, which `?` parameters must follow.
 */
export function givesUpSql({ usedAttempts, maxAttempts, fatal }: GiveUpOperands): string {
  const exhausted = `${usedAttempts} >= ${maxAttempts}`;
  return fatal === undefined ? exhausted : `${fatal} OR ${exhausted}`;
}

/** The give-up rule as an SQL expression of the status, as `failedStatus` decides it. */
export function failedStatusSql(operands: GiveUpOperands): string {
  return `CASE WHEN ${givesUpSql(operands)} THEN '${MANUAL_REQUIRED}' ELSE '${FAILED}' END`;
}
