import type { ConsumeMessage } from 'amqplib';
import { identifyDelivery } from '../../lib/inbox/identify-delivery';
import { InboxHandlerDefinition } from '../../lib/inbox/inbox-handler-options';
import { MalformedBody, safeDeserializer } from '../../lib/inbox/malformed-body';
import { bizKeyMessageId } from '../../lib/inbox/identify-delivery';

const handler: InboxHandlerDefinition = { consumer: 'inventory', mode: 'transactional', maxAttempts: 5, invoke: async () => undefined };

function message(body: string, properties: Partial<ConsumeMessage['properties']> = {}): ConsumeMessage {
  return {
    content: Buffer.from(body),
    fields: { exchange: 'orders', routingKey: 'order.paid', deliveryTag: 1, redelivered: false, consumerTag: 'c' },
    properties: { headers: {}, ...properties },
  } as ConsumeMessage;
}

describe('identifyDelivery', () => {
  it('keys a delivery by its AMQP messageId, per consumer', () => {
    const { row, rejection } = identifyDelivery(handler, { orderId: 1 }, message('{"orderId":1}', { messageId: 'm-1', type: 'order.paid' }), 1_000);
    expect(rejection).toBeUndefined();
    expect(row).toMatchObject({ consumer: 'inventory', messageId: 'm-1', type: 'order.paid', bizKey: null, payload: '{"orderId":1}', maxAttempts: 5 });
  });

  it('adds the bizKey layer, and keys by it when there is no messageId', () => {
    const withBizKey = { ...handler, bizKey: (p: { orderId: number }) => `order-${p.orderId}:paid` };
    expect(identifyDelivery(withBizKey, { orderId: 1 }, message('{}', { messageId: 'm-1', type: 'order.paid' }), 1_000).row).toMatchObject({
      messageId: 'm-1',
      bizKey: 'order-1:paid',
    });
    expect(identifyDelivery(withBizKey, { orderId: 1 }, message('{}', { type: 'order.paid' }), 1_000).row.messageId).toBe(
      bizKeyMessageId('order.paid', 'order-1:paid'),
    );
    expect(identifyDelivery(withBizKey, { orderId: 1 }, message('{}'), 1_000).row).toMatchObject({ type: '', messageId: bizKeyMessageId('', 'order-1:paid') });
    // Two facts whose text runs together the same way get ids of their own.
    expect(bizKeyMessageId('order:paid', '42')).not.toBe(bizKeyMessageId('order', 'paid:42'));
  });

  it('rejects a message it cannot dedupe, unless the handler opted into a content hash', () => {
    expect(identifyDelivery(handler, {}, message('{}'), 1_000).rejection).toMatch(/no messageId/);
    const hashed = identifyDelivery({ ...handler, messageIdFallback: 'content-hash' }, {}, message('{"a":1}'), 1_000);
    expect(hashed.rejection).toBeUndefined();
    expect(hashed.row.messageId).toBe(identifyDelivery({ ...handler, messageIdFallback: 'content-hash' }, {}, message('{"a":1}'), 1_000).row.messageId);
    expect(hashed.row.messageId).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('keeps the ordering key of a delivery rejected for its identity, so the key waits behind it', () => {
    const ordered = { ...handler, mode: 'deferred' as const, orderingKey: (p: { account: string }) => p.account };
    const noId = identifyDelivery(ordered, { account: 'acct-1' }, message('{"account":"acct-1"}'), 1_000);
    expect(noId.rejection).toMatch(/no messageId/);
    expect(noId.row).toMatchObject({ messageId: expect.stringMatching(/^rejected:/), orderingKey: 'acct-1' });
    const throwingBizKey = {
      ...ordered,
      bizKey: () => {
        throw new Error('no order id');
      },
    };
    expect(identifyDelivery(throwingBizKey, { account: 'acct-1' }, message('{}', { messageId: 'm-3' }), 1_000).row.orderingKey).toBe('acct-1');
    // A key the inbox cannot store, or a body no key can be read from, leaves none.
    expect(identifyDelivery(ordered, { account: 'k'.repeat(256) }, message('{}', { messageId: 'm-4' }), 1_000).row.orderingKey).toBeNull();
    expect(
      identifyDelivery(ordered, new MalformedBody('the body is not valid JSON'), message('{oops', { messageId: 'm-5' }), 1_000).row.orderingKey,
    ).toBeNull();
  });

  it('rejects a malformed body but keeps it for an operator', () => {
    const { row, rejection } = identifyDelivery(handler, new MalformedBody('the body is not valid JSON'), message('{oops', { messageId: 'm-2' }), 1_000);
    expect(rejection).toMatch(/not valid JSON/);
    expect(row).toMatchObject({ messageId: 'm-2', payload: '{oops' });
  });

  it('rejects an oversize body without storing it', () => {
    const { row, rejection } = identifyDelivery(handler, {}, message('x'.repeat(50), { messageId: 'm-3' }), 10);
    expect(rejection).toMatch(/50 bytes, more than inboxMaxBodyBytes \(10\)/);
    expect(row.payload).toBe('');
  });

  it('rejects a bizKey extractor that throws, and over-long keys', () => {
    const throwing = {
      ...handler,
      bizKey: () => {
        throw new Error('no order id');
      },
    };
    expect(identifyDelivery(throwing, {}, message('{}', { messageId: 'm-4' }), 1_000).rejection).toMatch(/bizKey extractor threw: Error: no order id/);
    const long = identifyDelivery(handler, {}, message('{}', { messageId: 'm'.repeat(300) }), 1_000);
    expect(long.rejection).toMatch(/messageId is longer than 255/);
    expect(long.row.messageId).toMatch(/^rejected:/);
  });

  it('replaces NUL characters, which PostgreSQL text cannot hold', () => {
    expect(identifyDelivery(handler, {}, message('a\u0000b', { messageId: 'm-5' }), 1_000).row.payload).toBe('a\uFFFDb');
  });
});

describe('safeDeserializer', () => {
  const deserialize = safeDeserializer();
  const msg = message('');

  it('parses JSON', () => {
    expect(deserialize(Buffer.from('{"a":1}'), msg)).toEqual({ a: 1 });
  });

  it('turns an empty or malformed body into a MalformedBody instead of throwing', () => {
    expect(deserialize(Buffer.alloc(0), msg)).toEqual(new MalformedBody('the body is empty'));
    expect(deserialize(Buffer.from('{'), msg)).toBeInstanceOf(MalformedBody);
  });
});
