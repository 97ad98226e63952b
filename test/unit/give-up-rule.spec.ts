import { MessageStatus } from '../../lib';
import { failedStatus, failedStatusSql, givesUpSql } from '../../lib/engine/give-up-rule';

describe('the give-up rule', () => {
  it('retries while used attempts stay below the limit, and gives up when they reach it', () => {
    expect(failedStatus(1, 3)).toBe(MessageStatus.FAILED);
    expect(failedStatus(2, 3)).toBe(MessageStatus.FAILED);
    expect(failedStatus(3, 3)).toBe(MessageStatus.MANUAL_REQUIRED);
    expect(failedStatus(4, 3)).toBe(MessageStatus.MANUAL_REQUIRED);
    expect(failedStatus(1, 1)).toBe(MessageStatus.MANUAL_REQUIRED);
  });

  it('gives up on a fatal failure whatever attempts are left', () => {
    expect(failedStatus(1, 10, true)).toBe(MessageStatus.MANUAL_REQUIRED);
  });

  it('states the same rule in SQL, its operands in the order fatal, used, max', () => {
    expect(givesUpSql({ usedAttempts: 't.attempts', maxAttempts: 't.max_attempts' })).toBe('t.attempts >= t.max_attempts');
    expect(givesUpSql({ fatal: '?', usedAttempts: 't.attempts + ?', maxAttempts: 't.max_attempts' })).toBe('? OR t.attempts + ? >= t.max_attempts');
    expect(failedStatusSql({ fatal: '$1', usedAttempts: '1', maxAttempts: '$2' })).toBe(
      `CASE WHEN $1 OR 1 >= $2 THEN '${MessageStatus.MANUAL_REQUIRED}' ELSE '${MessageStatus.FAILED}' END`,
    );
  });
});
