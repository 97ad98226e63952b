import { OutboxMessageInvalidError } from '../../lib';
import { OutboxMessage } from '../../lib/message/outbox-message';
import { toNewOutboxRow } from '../../lib/message/validate-message';

const valid: OutboxMessage = { type: 'order.paid', exchange: 'orders', routingKey: 'order.paid', payload: { orderId: 1 } };

describe('toNewOutboxRow', () => {
  it('serialises the payload and headers, and generates a UUID message id', () => {
    const row = toNewOutboxRow({ ...valid, headers: { tenant: 't1' }, bizKey: 'order-1:paid' }, 10);
    expect(row).toMatchObject({ type: 'order.paid', payload: '{"orderId":1}', headers: '{"tenant":"t1"}', bizKey: 'order-1:paid', maxAttempts: 10 });
    expect(row.messageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(toNewOutboxRow(valid, 10).messageId).not.toBe(row.messageId);
  });

  it('keeps a given message id and per-message attempt limit', () => {
    const messageId = '0b7c9b7e-2f7e-4f4e-9d55-2b0b3c7f1a10';
    expect(toNewOutboxRow({ ...valid, messageId, maxAttempts: 3 }, 10)).toMatchObject({ messageId, maxAttempts: 3 });
  });

  it.each<[string, Partial<OutboxMessage> & Record<string, unknown>, RegExp]>([
    ['an empty type', { type: '' }, /type must be a non-empty string/],
    ['a missing routing key', { routingKey: undefined as unknown as string }, /routingKey must be a string/],
    ['a message id that is not a UUID', { messageId: 'abc' }, /messageId must be a UUID/],
    ['a payload with a BigInt', { payload: { n: BigInt(1) } }, /payload is not JSON-serialisable/],
    ['an undefined payload', { payload: undefined }, /payload is not JSON-serialisable/],
    ['array headers', { headers: [] as unknown as Record<string, unknown> }, /headers must be an object/],
    ['an over-long bizKey', { bizKey: 'k'.repeat(256) }, /bizKey is longer than 255/],
    ['a zero attempt limit', { maxAttempts: 0 }, /maxAttempts must be a positive integer/],
  ])('rejects %s with a typed error', (_, change, message) => {
    expect(() => toNewOutboxRow({ ...valid, ...change } as OutboxMessage, 10)).toThrow(OutboxMessageInvalidError);
    expect(() => toNewOutboxRow({ ...valid, ...change } as OutboxMessage, 10)).toThrow(message);
  });
});
