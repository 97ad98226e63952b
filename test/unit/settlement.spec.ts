import { MessageStatus, NonRetryableError, RetryLaterError } from '../../lib';
import { SendTimeoutError, TransportUnavailableError } from '../../lib/entries/transports';
import { ClaimedMessage } from '../../lib/dialects/outbox-dialect';
import { failedSettlement, MAX_RETRY_AFTER_MS, settleBatch } from '../../lib/engine/settlement';

const policy = { backoff: { baseMs: 100, maxMs: 10_000, jitter: 0 }, lastErrorMaxLength: 200 };
const claim = (attempts: number, maxAttempts = 5) => ({ id: '1', claimToken: 't', attempts, maxAttempts, orderingKey: null });

describe('failedSettlement', () => {
  it('schedules a retry with backoff for a retryable error', () => {
    expect(failedSettlement(claim(0), new Error('ECONNRESET'), policy)).toEqual({
      id: '1',
      claimToken: 't',
      status: MessageStatus.FAILED,
      delayMs: 100,
      error: 'Error: ECONNRESET',
    });
    expect(failedSettlement(claim(2), new Error('x'), policy).delayMs).toBe(400);
  });

  it('waits at least what the receiver asked for, up to a day, and never less than the backoff', () => {
    expect(failedSettlement(claim(0), new RetryLaterError('503', 2_000), policy).delayMs).toBe(2_000);
    expect(failedSettlement(claim(0), new Error('wrapped', { cause: new RetryLaterError('429', 2_000) }), policy).delayMs).toBe(2_000);
    expect(failedSettlement(claim(3), new RetryLaterError('503', 10), policy).delayMs).toBe(800);
    expect(failedSettlement(claim(0), new RetryLaterError('503', 1e12), policy).delayMs).toBe(MAX_RETRY_AFTER_MS);
    for (const hostile of [NaN, -5, Infinity]) expect(failedSettlement(claim(0), new RetryLaterError('503', hostile), policy).delayMs).toBe(100);
    expect(failedSettlement(claim(4, 5), new RetryLaterError('503', 2_000), policy)).toMatchObject({ status: MessageStatus.MANUAL_REQUIRED, delayMs: 0 });
  });

  it('requires manual action when the last attempt fails', () => {
    expect(failedSettlement(claim(4, 5), new Error('x'), policy).status).toBe(MessageStatus.MANUAL_REQUIRED);
  });

  it('requires manual action at once for a fatal error', () => {
    expect(failedSettlement(claim(0), new NonRetryableError('bad payload'), policy)).toMatchObject({
      status: MessageStatus.MANUAL_REQUIRED,
      error: 'NonRetryableError: bad payload',
    });
    const isFatalError = (e: unknown) => e instanceof RangeError;
    expect(failedSettlement(claim(0), new RangeError('r'), { ...policy, isFatalError }).status).toBe(MessageStatus.MANUAL_REQUIRED);
  });
});

describe('settleBatch', () => {
  it('sorts send results into DONE claims and failed settlements', () => {
    const message = (id: string) => ({ id, claimToken: 'tok', attempts: 0, maxAttempts: 3, orderingKey: null }) as ClaimedMessage;
    const result = settleBatch(
      [message('1'), message('2'), message('3')],
      [
        { status: 'fulfilled', value: undefined },
        { status: 'rejected', reason: new Error('nope') },
        { status: 'fulfilled', value: undefined },
      ],
      policy,
    );
    expect(result.done).toEqual([
      { id: '1', claimToken: 'tok' },
      { id: '3', claimToken: 'tok' },
    ]);
    expect(result.failed).toEqual([expect.objectContaining({ id: '2', status: MessageStatus.FAILED, error: 'Error: nope' })]);
  });

  it('gives back, unattempted, the messages the transport could not attempt', () => {
    const message = (id: string) => ({ id, claimToken: 'tok', attempts: 2, maxAttempts: 3, orderingKey: null }) as ClaimedMessage;
    const result = settleBatch(
      [message('1'), message('2'), message('3')],
      [
        { status: 'rejected', reason: new TransportUnavailableError('disconnected') },
        { status: 'rejected', reason: new SendTimeoutError('2', 100) },
        { status: 'fulfilled', value: undefined },
      ],
      policy,
    );
    expect(result.released).toEqual([{ id: '1', claimToken: 'tok' }]);
    // A timeout while connected is the message's own failure: its last attempt is spent.
    expect(result.failed).toEqual([expect.objectContaining({ id: '2', status: MessageStatus.MANUAL_REQUIRED })]);
    expect(result.done).toEqual([{ id: '3', claimToken: 'tok' }]);
  });
});
