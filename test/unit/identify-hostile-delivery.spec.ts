import type { ConsumeMessage } from 'amqplib';
import { identifyDelivery } from '../../lib/inbox/identify-delivery';
import { InboxHandlerDefinition } from '../../lib/inbox/inbox-handler-options';
import { isRedelivery } from '../../lib/inbox/identify-delivery';

const handler: InboxHandlerDefinition = { consumer: 'inventory', mode: 'transactional', maxAttempts: 5, invoke: async () => undefined };

function message(
  body: string | Buffer,
  properties: Partial<ConsumeMessage['properties']> = {},
  fields: Partial<ConsumeMessage['fields']> = {},
): ConsumeMessage {
  return {
    content: Buffer.isBuffer(body) ? body : Buffer.from(body),
    fields: { exchange: 'orders', routingKey: 'order.paid', deliveryTag: 1, redelivered: false, consumerTag: 'c', ...fields },
    properties: { headers: {}, ...properties },
  } as ConsumeMessage;
}

describe('identifyDelivery with identity text the inbox cannot store', () => {
  it('rejects a NUL in the messageId, keying the row apart and naming the cause', () => {
    const { row, rejection } = identifyDelivery(handler, {}, message('{}', { messageId: 'm\u0000-1', type: 'order.paid' }), 1_000);
    expect(rejection).toMatch(/messageId contains a NUL character .*"m\\u0000-1"/);
    expect(row.messageId).toMatch(/^rejected:/);
    expect(row.payload).toBe('{}');
  });

  it('rejects a NUL in the type, storing it replaced', () => {
    const { row, rejection } = identifyDelivery(handler, {}, message('{}', { messageId: 'm-2', type: 'order\u0000.paid' }), 1_000);
    expect(rejection).toMatch(/type contains a NUL character/);
    expect(row).toMatchObject({ messageId: 'm-2', type: 'order\uFFFD.paid', bizKey: null });
  });

  it('rejects a bizKey extractor that yields a NUL, a lone surrogate or no string', () => {
    const withKey = (bizKey: unknown) => ({ ...handler, bizKey: () => bizKey as string });
    expect(identifyDelivery(withKey('k\u0000'), {}, message('{}', { messageId: 'm-3' }), 1_000).rejection).toMatch(/bizKey contains a NUL/);
    expect(identifyDelivery(withKey('k\ud800'), {}, message('{}', { messageId: 'm-3' }), 1_000).rejection).toMatch(/bizKey is not well-formed Unicode/);
    expect(identifyDelivery(withKey(42), {}, message('{}', { messageId: 'm-3' }), 1_000).rejection).toMatch(/bizKey extractor returned a number/);
  });

  it('processes a delivery with a NUL in its exchange or routing key, storing them replaced', () => {
    const { row, rejection } = identifyDelivery(
      handler,
      {},
      message('{}', { messageId: 'm-4' }, { exchange: 'ord\u0000ers', routingKey: 'order\u0000.paid' }),
      1_000,
    );
    expect(rejection).toBeUndefined();
    expect(row).toMatchObject({ exchange: 'ord\uFFFDers', routingKey: 'order\uFFFD.paid' });
  });

  it('keeps NUL in header text, which JSON escapes', () => {
    const { row, rejection } = identifyDelivery(handler, {}, message('{}', { messageId: 'm-5', headers: { 'x\u0000': 'v\u0000' } }), 1_000);
    expect(rejection).toBeUndefined();
    expect(JSON.parse(row.headers)).toEqual({ 'x\u0000': 'v\u0000' });
  });

  it('rejects, for a deferred handler with its own deserializer, a body the stored text would not give back', () => {
    const deferred = { ...handler, mode: 'deferred' as const, customDeserializer: true };
    const binary = message(Buffer.from([0x08, 0x96, 0x01, 0xff]), { messageId: 'm-6' });
    expect(identifyDelivery(deferred, { decoded: true }, binary, 1_000).rejection).toMatch(/not UTF-8 text without NUL.*use mode 'transactional'/);
    expect(identifyDelivery({ ...deferred, customDeserializer: false }, { decoded: true }, binary, 1_000).rejection).toBeUndefined();
    expect(identifyDelivery(deferred, { decoded: true }, message('plain text', { messageId: 'm-7' }), 1_000).rejection).toBeUndefined();
  });
});

describe('isRedelivery', () => {
  it("reads the broker's redelivered flag and a quorum queue's delivery count", () => {
    expect(isRedelivery(message('{}'))).toBe(false);
    expect(isRedelivery(message('{}', {}, { redelivered: true }))).toBe(true);
    expect(isRedelivery(message('{}', { headers: { 'x-delivery-count': 2 } }))).toBe(true);
    expect(isRedelivery(message('{}', { headers: { 'x-delivery-count': 0 } }))).toBe(false);
  });
});
