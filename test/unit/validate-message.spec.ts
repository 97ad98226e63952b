import fc from 'fast-check';
import { OutboxMessageInvalidError } from '../../lib';
import { OutboxMessage } from '../../lib/message/outbox-message';
import { MessageLimits, toNewOutboxRow } from '../../lib/message/validate-message';
import { deliveryHeaders } from '../../lib/transport/delivery-headers';
import { amqplibRoundTrip, canonicalJson } from '../support/amqplib-codec';
import { messageDraft, nested } from '../support/message-arbitraries';

const limits: MessageLimits = { maxAttempts: 10, maxPayloadBytes: 1_048_576 };
const valid: OutboxMessage = { type: 'order.paid', exchange: 'orders', routingKey: 'order.paid', payload: { orderId: 1 } };
const FIELDS = ['type', 'exchange', 'routingKey', 'bizKey', 'orderingKey', 'messageId', 'maxAttempts', 'headers', 'payload'];

function refusal(message: unknown, withLimits = limits): OutboxMessageInvalidError {
  try {
    toNewOutboxRow(message as OutboxMessage, 'default', withLimits);
  } catch (error) {
    if (error instanceof OutboxMessageInvalidError) return error;
    throw error;
  }
  throw new Error('the message was accepted');
}

const characters = (text: string) => [...text].length;
const throughUtf8 = (text: string) => Buffer.from(text, 'utf8').toString('utf8');

describe('toNewOutboxRow', () => {
  it('serialises the payload and headers, and generates a UUID message id', () => {
    const row = toNewOutboxRow({ ...valid, headers: { tenant: 't1' }, bizKey: 'order-1:paid' }, 'default', limits);
    expect(row).toMatchObject({ type: 'order.paid', payload: '{"orderId":1}', headers: '{"tenant":"t1"}', bizKey: 'order-1:paid', maxAttempts: 10 });
    expect(row.messageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(toNewOutboxRow(valid, 'default', limits).messageId).not.toBe(row.messageId);
  });

  it('keeps a given message id (lower-cased) and per-message attempt limit', () => {
    const messageId = '0b7c9b7e-2f7e-4f4e-9d55-2b0b3c7f1a10';
    expect(toNewOutboxRow({ ...valid, messageId: messageId.toUpperCase(), maxAttempts: 3 }, 'default', limits)).toMatchObject({ messageId, maxAttempts: 3 });
  });

  it.each<[string, string, Record<string, unknown>, RegExp]>([
    ['an empty type', 'type', { type: '' }, /type must be a non-empty string/],
    ['a type of 100 "€" (300 bytes)', 'type', { type: '€'.repeat(100) }, /type is 300 bytes in UTF-8, more than AMQP's 255-byte short string/],
    ['an exchange of 200 "é" (400 bytes)', 'exchange', { exchange: 'é'.repeat(200) }, /exchange is 400 bytes in UTF-8, more than AMQP's 255-byte short string/],
    ['a routing key of 256 ASCII bytes', 'routingKey', { routingKey: 'k'.repeat(256) }, /routingKey is 256 bytes in UTF-8/],
    ['a routing key of 64 emoji (256 bytes)', 'routingKey', { routingKey: '😀'.repeat(64) }, /routingKey is 256 bytes in UTF-8/],
    ['a business key of 256 characters', 'bizKey', { bizKey: 'k'.repeat(256) }, /bizKey is 256 characters, more than its 255-character column/],
    ['an ordering key of 256 emoji', 'orderingKey', { orderingKey: '😀'.repeat(256) }, /orderingKey is 256 characters/],
    ...(['type', 'exchange', 'routingKey', 'bizKey', 'orderingKey'] as const).flatMap((field): [string, string, Record<string, unknown>, RegExp][] => [
      [
        `NUL in ${field}`,
        field,
        { [field]: 'a\u0000b' },
        new RegExp(`${field} contains a NUL character \\(U\\+0000\\) at index 1, which PostgreSQL cannot store`),
      ],
      [
        `a lone surrogate in ${field}`,
        field,
        { [field]: 'a\ud800b' },
        new RegExp(`${field} contains a lone surrogate \\(U\\+D800 at index 1\\), which has no UTF-8 form`),
      ],
    ]),
    [
      'a CR in the exchange',
      'exchange',
      { exchange: 'orders\r' },
      /exchange contains a line break \(U\+000D at index 6\): RabbitMQ removes CR and LF from the names of the exchanges it declares/,
    ],
    [
      'an LF in the routing key of the default exchange (a queue name)',
      'routingKey',
      { exchange: '', routingKey: 'jobs\n' },
      /routingKey contains a line break \(U\+000A at index 4\): RabbitMQ removes CR and LF from the names of the queues it declares/,
    ],
    ['a message id that is not a UUID', 'messageId', { messageId: 'abc' }, /messageId must be a UUID, got "abc"/],
    ['a BigInt message id', 'messageId', { messageId: 1n }, /messageId must be a UUID, got 1/],
    ['maxAttempts: 3e9', 'maxAttempts', { maxAttempts: 3e9 }, /maxAttempts must be an integer from 1 to 1000, got 3000000000/],
    ['a zero attempt limit', 'maxAttempts', { maxAttempts: 0 }, /maxAttempts must be an integer from 1 to 1000, got 0/],
    ['a fractional attempt limit', 'maxAttempts', { maxAttempts: 1.5 }, /got 1.5/],
    ['an attempt limit as text', 'maxAttempts', { maxAttempts: '3' }, /got "3"/],
    ['a payload with a BigInt', 'payload', { payload: { n: BigInt(1) } }, /payload is not JSON-serialisable/],
    ['an undefined payload', 'payload', { payload: undefined }, /payload is not JSON-serialisable/],
    ['a payload nested beyond what JSON.stringify can recurse', 'payload', { payload: nested(100_000) }, /payload is nested too deeply to serialise as JSON/],
    ['array headers', 'headers', { headers: [] }, /headers must be an object/],
    ['headers whose JSON is not an object', 'headers', { headers: { toJSON: () => ['a'] } }, /headers must serialise to a JSON object/],
    [
      'a header name of 256 bytes',
      'headers',
      { headers: { ['k'.repeat(256)]: 1 } },
      /the name of headers\["k{40}…"\] is 256 bytes in UTF-8, more than AMQP's 255-byte short string/,
    ],
    [
      'a nested header name of 256 bytes',
      'headers',
      { headers: { a: [{ ['é'.repeat(128)]: 1 }] } },
      /the name of headers\["a"\]\[0\]\["é{40}…"\] is 256 bytes/,
    ],
    [
      "headers over 64 KiB less the delivery headers' room",
      'headers',
      { headers: { big: 'x'.repeat(65_396) } },
      /headers encode to 65409 bytes as an AMQP field table, more than 65408 bytes \(amqplib's 65536, less 128 kept for the delivery headers\)/,
    ],
    [
      'a CC header that is a string',
      'headers',
      { headers: { CC: 'audit' } },
      /headers\["CC"\] must be an array of routing keys \(RabbitMQ's sender-selected distribution\); RabbitMQ closes the channel for a string/,
    ],
    ['a BCC header that is null', 'headers', { headers: { BCC: null } }, /headers\["BCC"\] must be an array .* for null/],
    ['a header named __proto__', 'headers', { headers: JSON.parse('{"__proto__":1}') }, /headers\["__proto__"\]: amqplib's decoder sets an object's prototype/],
    ['a nested header named __proto__', 'headers', { headers: JSON.parse('{"a":{"__proto__":{"x":1}}}') }, /headers\["a"\]\["__proto__"\]/],
    [
      'a nested table with a hasOwnProperty field',
      'headers',
      { headers: { a: { hasOwnProperty: 1 } } },
      /headers\["a"\]\["hasOwnProperty"\]: a nested table with a field named "hasOwnProperty" makes amqplib's encoder throw/,
    ],
    [
      'a nested table with a "!" field',
      'headers',
      { headers: { a: [{ '!': 'timestamp', value: 1 }] } },
      /headers\["a"\]\[0\]\["!"\]: amqplib reads a nested table with a "!" field as a type annotation/,
    ],
    [
      'a header number with a fraction at 2^50',
      'headers',
      { headers: { n: 2 ** 50 + 0.5 } },
      /headers\["n"\] is 1125899906842624.5: amqplib sends a number of magnitude 2\^50 or more as a 64-bit integer/,
    ],
    ['a header number below -2^63', 'headers', { headers: { n: -1e20 } }, /headers\["n"\] is -100000000000000000000, below -2\^63/],
    ['a lone surrogate in a header value', 'headers', { headers: { s: ['a\ud800'] } }, /headers\["s"\]\[0\] contains a lone surrogate \(U\+D800 at index 1\)/],
    [
      'a lone surrogate in a header name',
      'headers',
      { headers: { 'k\udc00': 1 } },
      /the name of headers\["k\\udc00"\] contains a lone surrogate \(U\+DC00 at index 1\)/,
    ],
    ['headers of 101 levels', 'headers', { headers: nested(101) }, /nested deeper than the 100 levels allowed in headers/],
    ['headers nested beyond what JSON.stringify can recurse', 'headers', { headers: nested(100_000) }, /headers is nested too deeply to serialise as JSON/],
  ])('refuses %s, naming the field', (_, field, change, message) => {
    const error = refusal({ ...valid, ...change });
    expect(error.field).toBe(field);
    expect(error.message).toMatch(message);
  });

  it.each<[string, Partial<OutboxMessage>]>([
    ['an exchange of 127 "é" (254 bytes)', { exchange: 'é'.repeat(127) }],
    ['a type of 255 ASCII bytes', { type: 't'.repeat(255) }],
    ['a routing key of 63 emoji and 3 ASCII (255 bytes)', { routingKey: `${'😀'.repeat(63)}abc` }],
    ['the empty exchange and routing key', { exchange: '', routingKey: '' }],
    ['line breaks and other controls in a routing key of a named exchange', { routingKey: 'a\r\nb\tc\u001f' }],
    ['a tab in the exchange', { exchange: 'orders\t' }],
    ['a business key of 255 emoji (510 UTF-16 units)', { bizKey: '😀'.repeat(255) }],
    ['an ordering key of 255 "é"', { orderingKey: 'é'.repeat(255) }],
    ['an attempt limit of 1000', { maxAttempts: 1_000 }],
    ["headers of exactly 65,408 bytes (64 KiB less the delivery headers' room)", { headers: { big: 'x'.repeat(65_395) } }],
    ['headers of 100 levels', { headers: nested(100) }],
    ['top-level names amqplib treats specially only when nested', { headers: { '!': 'timestamp', value: 1, hasOwnProperty: 2 } }],
    ['NUL and empty names and values in headers', { headers: { 'k\u0000': 'v\u0000', '': '' } }],
    ['CC and BCC arrays (sender-selected distribution)', { headers: { CC: ['audit', 1], BCC: [] } }],
    ['a nested CC that RabbitMQ does not read', { headers: { a: { CC: 'x' } } }],
    [
      'header numbers at the edges of their encodings',
      { headers: { n: [-(2 ** 63), 2 ** 63, 2 ** 53 + 2, -(2 ** 52), 2 ** 50, 1e300, 5e-324, -0.5, 127, -129] } },
    ],
    ['a payload with NUL and lone surrogates (JSON escapes them)', { payload: { text: 'a\u0000\ud800\udc00\udfff' } }],
  ])('accepts %s as given', (_, change) => {
    const message = { ...valid, ...change };
    const row = toNewOutboxRow(message, 'default', limits);
    expect(row).toMatchObject({
      type: message.type,
      exchange: message.exchange,
      routingKey: message.routingKey,
      bizKey: message.bizKey ?? null,
      orderingKey: message.orderingKey ?? null,
      payload: JSON.stringify(message.payload),
      headers: JSON.stringify(message.headers ?? {}),
    });
  });

  it('counts the payload in bytes of its UTF-8 JSON text against maxPayloadBytes', () => {
    const withLimit = { ...limits, maxPayloadBytes: 1_000 };
    // 2 quotes and 499 two-byte characters: exactly the limit.
    expect(toNewOutboxRow({ ...valid, payload: 'é'.repeat(499) }, 'default', withLimit).payload).toBe(JSON.stringify('é'.repeat(499)));
    const error = refusal({ ...valid, payload: 'é'.repeat(600) }, withLimit);
    expect(error.field).toBe('payload');
    expect(error.message).toMatch(/payload is 1202 bytes of JSON in UTF-8, more than maxPayloadBytes \(1000\); store large content elsewhere/);
  });

  it('keeps the one-argument constructor of OutboxMessageInvalidError', () => {
    const error = new OutboxMessageInvalidError('message must be an object');
    expect(error.message).toBe('Invalid outbox message: message must be an object');
    expect(error.field).toBeUndefined();
  });

  it('accepts only what every database stores and amqplib sends exactly as given', () => {
    const small: MessageLimits = { maxAttempts: 10, maxPayloadBytes: 8_192 };
    fc.assert(
      fc.property(messageDraft, fc.constantFrom('orders', '', 'é'.repeat(127), 'é'.repeat(128), 'a\u0000', 'a\r'), (draft, exchange) => {
        const message = { ...draft, exchange } as OutboxMessage;
        let row;
        try {
          row = toNewOutboxRow(message, 'default', small);
        } catch (error) {
          expect(error).toBeInstanceOf(OutboxMessageInvalidError);
          expect(FIELDS).toContain((error as OutboxMessageInvalidError).field);
          return;
        }
        expect(row.exchange).not.toMatch(/[\r\n]/);
        if (row.exchange === '') expect(row.routingKey).not.toMatch(/[\r\n]/);
        for (const text of [row.type, row.exchange, row.routingKey]) {
          expect(Buffer.byteLength(text)).toBeLessThanOrEqual(255);
          expect(text).not.toContain('\u0000');
          expect(throughUtf8(text)).toBe(text);
        }
        for (const text of [row.bizKey, row.orderingKey]) {
          if (text === null) continue;
          expect(characters(text)).toBeLessThanOrEqual(255);
          expect(text).not.toContain('\u0000');
          expect(throughUtf8(text)).toBe(text);
        }
        expect(row).toMatchObject({
          type: draft.type,
          exchange,
          routingKey: draft.routingKey,
          bizKey: draft.bizKey ?? null,
          orderingKey: draft.orderingKey ?? null,
        });
        expect(row.maxAttempts).toBe(draft.maxAttempts ?? small.maxAttempts);
        expect(row.payload).toBe(JSON.stringify(draft.payload));
        expect(Buffer.byteLength(row.payload)).toBeLessThanOrEqual(small.maxPayloadBytes);
        expect(throughUtf8(row.payload)).toBe(row.payload);
        expect(row.headers).toBe(JSON.stringify(draft.headers ?? {}));
        const stored = JSON.parse(row.headers) as Record<string, unknown>;
        // As the transport sends them: with the delivery headers of a late attempt.
        const sent: Record<string, unknown> = { ...stored, ...deliveryHeaders({ attempts: 999, createdAt: new Date(Date.UTC(9999, 11, 31)) }) };
        const { size, decoded } = amqplibRoundTrip(sent);
        expect(size).toBeLessThanOrEqual(65_536);
        expect(canonicalJson(decoded)).toBe(canonicalJson(sent));
        for (const name of ['CC', 'BCC']) if (name in sent) expect(Array.isArray(sent[name])).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });
});
