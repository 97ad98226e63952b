import { NonRetryableError } from '../../lib';
import { SendTimeoutError, UnroutableMessageError } from '../../lib/entries/transports';
import { classifyFailure } from '../../lib/retry/error-classifier';
import { describeError } from '../../lib/retry/error-classifier';

class PaymentDeclined extends Error {}

describe('classifyFailure', () => {
  it('retries connection, timeout, channel and unknown errors', () => {
    const econnreset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    expect(classifyFailure(econnreset)).toBe('retry');
    expect(classifyFailure(new SendTimeoutError('id', 100))).toBe('retry');
    expect(classifyFailure(new Error('Channel closed by server: 404 (NOT-FOUND)'))).toBe('retry');
    expect(classifyFailure(new UnroutableMessageError('id', 'x', 'y'))).toBe('retry');
    expect(classifyFailure('a string was thrown')).toBe('retry');
    expect(classifyFailure(undefined)).toBe('retry');
  });

  it('treats a NonRetryableError as fatal, also deep in the cause chain', () => {
    expect(classifyFailure(new NonRetryableError('bad'))).toBe('fatal');
    const wrapped = new Error('outer', { cause: new Error('middle', { cause: new NonRetryableError('root') }) });
    expect(classifyFailure(wrapped)).toBe('fatal');
    expect(classifyFailure(new AggregateError([new Error('a'), new NonRetryableError('b')]))).toBe('fatal');
  });

  it('applies the user predicate to every link of the chain', () => {
    const isFatal = (error: unknown) => error instanceof PaymentDeclined;
    expect(classifyFailure(new PaymentDeclined(), isFatal)).toBe('fatal');
    expect(classifyFailure(new Error('wrapper', { cause: new PaymentDeclined() }), isFatal)).toBe('fatal');
    expect(classifyFailure(new Error('other'), isFatal)).toBe('retry');
  });

  it('survives cause cycles', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(classifyFailure(a)).toBe('retry');
  });
});

describe('describeError', () => {
  it('names each link of the chain and truncates to the limit', () => {
    const error = new Error('outer', { cause: new TypeError('inner') });
    expect(describeError(error, 1_000)).toBe('Error: outer <- caused by TypeError: inner');
    const long = describeError(new Error('x'.repeat(5_000)), 100);
    expect(long).toHaveLength(100);
    expect(long.endsWith('…')).toBe(true);
  });

  it('describes what was thrown even when it has no text', () => {
    const throwingMessage = Object.defineProperty(new Error(), 'message', {
      get() {
        throw new Error('no');
      },
    });
    expect(describeError(Object.create(null), 100)).toBe('a thrown object without text');
    expect(describeError(throwingMessage, 100)).toBe('a thrown object without text');
    expect(describeError(Symbol('s'), 100)).toBe('Symbol(s)');
  });
});
