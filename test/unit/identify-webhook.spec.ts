import fc, { Arbitrary } from 'fast-check';
import { isWellFormed } from '../../lib/message/message-text';
import { ArrivedRequest, IdentifiedWebhook, identifyWebhook } from '../../lib/webhooks/identify-webhook';
import { resolveWebhookInbox, WebhookInboxDefaults } from '../../lib/webhooks/resolve-webhook-inbox';
import { WebhookInboxDefinition } from '../../lib/webhooks/webhook-inbox-definition';
import { WebhookInboxOptions } from '../../lib/webhooks/webhook-inbox-options';
import { flatHeaders, WebhookRequest } from '../../lib/webhooks/webhook-request';
import { text } from '../support/message-arbitraries';
import { bizKeyMessageId } from '../../lib/inbox/identify-delivery';

const DEFAULTS: WebhookInboxDefaults = { consumer: 'PaymentWebhooks.onPayment', maxAttempts: 5, maxBodyBytes: 1_048_576 };
const WHERE = '@WebhookInbox on PaymentWebhooks.onPayment';
/** The width of the inbox table's identity columns, in characters. */
const KEY_MAX = 255;

function definitionOf(options: WebhookInboxOptions): WebhookInboxDefinition {
  const { definition, problems } = resolveWebhookInbox(options, DEFAULTS, WHERE);
  if (!definition) throw new Error(`the test's options were refused: ${problems.join('; ')}`);
  return definition;
}

/** A request as the intake hands it over: headers flattened as Node's would be, the body's bytes. */
function arrived(headers: Record<string, unknown>, body: string | Uint8Array, url = '/hooks/payments'): ArrivedRequest {
  return {
    method: 'POST',
    url,
    headers: flatHeaders(headers as Record<string, string | string[]>),
    rawBody: typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body),
  };
}

const json = (body: unknown, headers: Record<string, unknown> = {}) => arrived({ 'content-type': 'application/json', ...headers }, JSON.stringify(body));

function rowOf(identified: IdentifiedWebhook) {
  if ('refusal' in identified) throw new Error(`refused with ${identified.refusal.status}: ${identified.refusal.reason}`);
  return identified.row;
}

function refusalOf(identified: IdentifiedWebhook) {
  if (!('refusal' in identified)) throw new Error(`stored as message ${identified.row.messageId}`);
  return identified.refusal;
}

/** Text every database stores as given in a varchar(255) column. */
function expectStorable(column: string, value: string): void {
  expect({ column, nul: value.includes('\u0000'), wellFormed: isWellFormed(value), fits: value.length <= KEY_MAX }).toEqual({
    column,
    nul: false,
    wellFormed: true,
    fits: true,
  });
}

describe('identifyWebhook', () => {
  it('stores the body as received, the kept headers and content-type, the method and the path', () => {
    const body = '{"orderId": 1,   "note": "spacing kept"}';
    const identified = identifyWebhook(
      definitionOf({ consumer: 'payments', type: 'payment.succeeded', maxAttempts: 3 }),
      arrived({ 'content-type': 'application/json', 'webhook-id': 'msg_1', 'webhook-timestamp': '1700000000', authorization: 'Bearer secret' }, body),
    );
    expect(rowOf(identified)).toEqual({
      consumer: 'payments',
      messageId: 'msg_1',
      type: 'payment.succeeded',
      bizKey: null,
      orderingKey: null,
      exchange: 'POST',
      routingKey: '/hooks/payments',
      payload: body,
      headers: JSON.stringify({ 'content-type': 'application/json', 'webhook-id': 'msg_1', 'webhook-timestamp': '1700000000' }),
      maxAttempts: 3,
    });
  });

  it('takes a numeric body field as the id, and refuses an object or an array there', () => {
    const byField = definitionOf({ messageId: { bodyField: 'data.id' } });
    expect(rowOf(identifyWebhook(byField, json({ data: { id: 42 } }))).messageId).toBe('42');
    expect(refusalOf(identifyWebhook(byField, json({ data: { id: { nested: 'x' } } })))).toEqual({
      status: 400,
      reason: 'messageId is a object, not a string',
    });
    expect(refusalOf(identifyWebhook(byField, json({ data: { id: ['a'] } }))).status).toBe(400);
    expect(refusalOf(identifyWebhook(byField, json({ data: { id: true } })))).toEqual({ status: 400, reason: 'messageId is a boolean, not a string' });
  });

  it('refuses with 400, naming the cause, an id with a NUL, a lone surrogate, or more than 255 characters', () => {
    const byHeader = definitionOf({});
    const byField = definitionOf({ messageId: { bodyField: 'id' } });
    expect(refusalOf(identifyWebhook(byHeader, json({}, { 'webhook-id': 'msg\u0000' })))).toEqual({
      status: 400,
      reason: expect.stringMatching(/^messageId contains a NUL .*"msg\\u0000"$/),
    });
    expect(refusalOf(identifyWebhook(byField, json({ id: 'msg\ud800' })))).toEqual({
      status: 400,
      reason: expect.stringMatching(/^messageId is not well-formed Unicode/),
    });
    expect(refusalOf(identifyWebhook(byHeader, json({}, { 'webhook-id': 'x'.repeat(256) })))).toEqual({
      status: 400,
      reason: 'messageId is longer than 255 characters',
    });
    expect(rowOf(identifyWebhook(byHeader, json({}, { 'webhook-id': 'x'.repeat(255) }))).messageId).toHaveLength(255);
  });

  it('dedupes by type and bizKey when there is no id, under an id that fits the column whatever their length', () => {
    const definition = definitionOf({ type: 'order.paid', bizKey: (request) => (request.body as { fact?: string }).fact, messageId: () => undefined });
    expect(rowOf(identifyWebhook(definition, json({ fact: 'order-7' })))).toMatchObject({
      messageId: bizKeyMessageId('order.paid', 'order-7'),
      type: 'order.paid',
      bizKey: 'order-7',
    });
    expect(rowOf(identifyWebhook(definition, json({ fact: 'f'.repeat(250) }))).messageId).toBe(bizKeyMessageId('order.paid', 'f'.repeat(250)));
    expect(refusalOf(identifyWebhook(definition, json({})))).toEqual({
      status: 400,
      reason: expect.stringMatching(/no message id \(from the messageId function\) and no bizKey/),
    });
  });

  it('refuses with 400 a body that is not UTF-8, holds a NUL, or is not the JSON its content type says', () => {
    const definition = definitionOf({});
    const id = { 'webhook-id': 'msg_1' };
    expect(refusalOf(identifyWebhook(definition, arrived({ ...id, 'content-type': 'text/plain' }, new Uint8Array([0x68, 0xc3, 0x28]))))).toEqual({
      status: 400,
      reason: 'the body is not UTF-8 text without NUL characters',
    });
    expect(refusalOf(identifyWebhook(definition, arrived({ ...id, 'content-type': 'text/plain' }, 'a\u0000b'))).status).toBe(400);
    expect(refusalOf(identifyWebhook(definition, arrived({ ...id, 'content-type': 'application/json' }, '{"orderId": 1'))).reason).toMatch(
      /^the body is not valid JSON/,
    );
  });

  it('counts the body limit in bytes: multi-byte characters within it by length but over it by bytes get 413', () => {
    const body = JSON.stringify({ note: '€'.repeat(100) });
    const definition = definitionOf({ maxBodyBytes: body.length + 10 });
    expect(Buffer.byteLength(body)).toBeGreaterThan(body.length + 10);
    expect(refusalOf(identifyWebhook(definition, json({ note: '€'.repeat(100) }, { 'webhook-id': 'msg_1' })))).toEqual({
      status: 413,
      reason: `the body has ${Buffer.byteLength(body)} bytes, more than the ${body.length + 10} that consumer "PaymentWebhooks.onPayment" takes`,
    });
    expect(
      rowOf(identifyWebhook(definitionOf({ maxBodyBytes: Buffer.byteLength(body) }), json({ note: '€'.repeat(100) }, { 'webhook-id': 'msg_1' }))).payload,
    ).toBe(body);
  });

  it('refuses with 400, not an exception, an extractor that throws anything at all or returns something other than a string', () => {
    const request = json({ orderId: 1 }, { 'webhook-id': 'msg_1' });
    const throwing = (thrown: unknown) =>
      definitionOf({
        bizKey: () => {
          throw thrown;
        },
      });
    expect(refusalOf(identifyWebhook(throwing(new Error('no fact\nforged line')), request))).toEqual({
      status: 400,
      reason: 'the bizKey extractor threw: Error: no fact\\u000aforged line',
    });
    for (const thrown of [
      undefined,
      null,
      'text',
      42,
      Symbol('s'),
      Object.create(null),
      {
        toString: () => {
          throw new Error('no text');
        },
      },
    ]) {
      expect(refusalOf(identifyWebhook(throwing(thrown), request)).reason).toMatch(/^the bizKey extractor threw: /);
    }
    for (const [value, kind] of [
      [42, 'number'],
      [['a'], 'object'],
      [{ id: 'a' }, 'object'],
      [true, 'boolean'],
      [Symbol('s'), 'symbol'],
      [() => 'a', 'function'],
    ] as const) {
      expect(refusalOf(identifyWebhook(definitionOf({ orderingKey: () => value as never }), request))).toEqual({
        status: 400,
        reason: `orderingKey is a ${kind}, not a string`,
      });
    }
  });

  it('reads only headers the request has, whatever their names: a kept or id header named like an object property is absent when not sent', () => {
    const definition = definitionOf({ headers: ['constructor', '__proto__', 'webhook-id'], messageId: { header: 'constructor' } });
    expect(refusalOf(identifyWebhook(definition, json({})))).toEqual({
      status: 400,
      reason: expect.stringMatching(/^the request has no message id \(from header "constructor"\)/),
    });
    const row = rowOf(identifyWebhook(definition, json({}, { constructor: 'msg_1' })));
    expect(row.messageId).toBe('msg_1');
    expect(JSON.parse(row.headers)).toEqual({ 'content-type': 'application/json', constructor: 'msg_1' });
  });

  it('stores header values and the path with NUL and lone surrogates replaced, the path cut to 255 characters on a character boundary', () => {
    const definition = definitionOf({ headers: ['x-note'] });
    const row = rowOf(identifyWebhook(definition, arrived({ 'webhook-id': 'msg_1', 'x-note': 'a\u0000b\ud800' }, '{}', `/${'a'.repeat(253)}😀tail`)));
    expect(JSON.parse(row.headers)).toEqual({ 'x-note': 'a\uFFFDb\uFFFD' });
    expectStorable('routingKey', row.routingKey);
    expect(row.routingKey.startsWith(`/${'a'.repeat(253)}`)).toBe(true);
  });
});

// ----- property tests -----

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit));

/** Text from the wire: mostly harmless, sometimes with NUL or lone surrogates, near or far over 255 characters. */
const hostileText: Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: text(300) },
  { weight: 1, arbitrary: loneSurrogate },
  { weight: 1, arbitrary: fc.integer({ min: 250, max: 20_000 }).map((length) => 'i'.repeat(length)) },
);

/** What a header, a body field or an extractor may hold. */
const hostileValue: Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: hostileText },
  { weight: 1, arbitrary: fc.array(hostileText, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant(undefined)) },
  { weight: 1, arbitrary: fc.anything({ maxDepth: 2, withNullPrototype: true }) },
);

/** A few names, so that generated headers, kept headers and id sources meet. */
const HEADER_NAMES = ['webhook-id', 'x-id', 'x-fact', 'x-note', 'content-type', 'constructor'];

/** What Node gives for a header: text (any, as a test may pass), repeated headers as an array, and numbers as a caller may set. */
const headerValue: Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: hostileText },
  { weight: 1, arbitrary: fc.array(hostileText, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.double()) },
);

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/cloudevents+json',
  'application/x-www-form-urlencoded',
  'text/plain',
];

const requestHeaders: Arbitrary<Record<string, unknown>> = fc
  .tuple(
    fc.dictionary(fc.constantFrom(...HEADER_NAMES, 'X-Id', 'Webhook-Id', 'x-other'), headerValue, { maxKeys: 6 }),
    fc.option(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...CONTENT_TYPES) }, { weight: 1, arbitrary: hostileText }), { nil: undefined }),
  )
  .map(([headers, contentType]) => (contentType === undefined ? headers : { ...headers, 'content-type': contentType }));

/** JSON whose id fields hold anything JSON can: text with NUL or lone surrogates (escaped), numbers, objects, arrays. */
const jsonBody = fc
  .record({ id: fc.jsonValue({ maxDepth: 1 }), data: fc.record({ id: fc.oneof(hostileText, fc.jsonValue({ maxDepth: 1 })) }), fact: hostileText })
  .map((body) => JSON.stringify(body));

const body: Arbitrary<string | Uint8Array> = fc.oneof(
  { weight: 4, arbitrary: jsonBody },
  { weight: 1, arbitrary: fc.jsonValue().map((value) => JSON.stringify(value) ?? '') },
  // Bytes that are mostly not UTF-8.
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }) },
  // Multi-byte text around a small limit.
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom('a', 'é', '€', '😀'), fc.integer({ min: 0, max: 150 }))
      .map(([character, count]) => `{"id":"${character.repeat(count)}"}`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'id=%00',
      'id=%FF%FE',
      'id=a&id=b',
      '__proto__=x&id=1',
      'id=' + '%F0%9F%98%80'.repeat(200),
      '{"id": 1',
      '\u0000',
      '\ufeff{"id":"x"}',
    ),
  },
  { weight: 1, arbitrary: hostileText },
);

/** An extractor as users write them, and as they go wrong. */
const extractor: Arbitrary<(request: WebhookRequest) => unknown> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.constantFrom<(request: WebhookRequest) => unknown>(
      (request) => request.headers['x-fact'],
      (request) => (request.body as { fact?: unknown } | null)?.fact,
    ),
  },
  { weight: 2, arbitrary: hostileValue.map((value) => () => value) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom<unknown>(new Error('no fact'), 'text', undefined, null, Symbol('s'), Object.create(null), { toString: () => ({}) })
      .map((thrown) => () => {
        throw thrown;
      }),
  },
);

const options: Arbitrary<WebhookInboxOptions> = fc.record(
  {
    consumer: fc.string({ minLength: 1, maxLength: 200 }).map((name) => name.replace(/\u0000/g, 'n')),
    messageId: fc.oneof(
      fc.constantFrom<WebhookInboxOptions['messageId']>(
        { header: 'webhook-id' },
        { header: 'X-Id' },
        { header: 'constructor' },
        { bodyField: 'id' },
        { bodyField: 'data.id' },
        { bodyField: '0' },
      ),
      extractor as Arbitrary<(request: WebhookRequest) => string | undefined>,
    ),
    type: fc.oneof(hostileText, extractor as Arbitrary<(request: WebhookRequest) => string | undefined>),
    bizKey: extractor as Arbitrary<(request: WebhookRequest) => string | undefined>,
    orderingKey: extractor as Arbitrary<(request: WebhookRequest) => string | undefined>,
    maxBodyBytes: fc.integer({ min: 1, max: 700 }),
    headers: fc.subarray(['webhook-id', 'X-Id', 'x-note', 'constructor', '__proto__']),
  },
  { requiredKeys: ['maxBodyBytes'] },
);

const request: Arbitrary<ArrivedRequest> = fc
  .tuple(requestHeaders, body, fc.oneof(fc.constant('/hooks/payments'), hostileText))
  .map(([headers, sent, url]) => arrived(headers, sent, url));

describe('identifyWebhook, for any request and any extractor', () => {
  it('never throws: it stores a row of storable identity text, or refuses with 400 or 413', () => {
    fc.assert(
      fc.property(options, request, (chosen, sent) => {
        const identified = identifyWebhook(definitionOf(chosen), sent);
        if ('refusal' in identified) {
          expect([400, 413]).toContain(identified.refusal.status);
          expect(typeof identified.refusal.reason).toBe('string');
          return;
        }
        const { row } = identified;
        expect(row.messageId.length).toBeGreaterThan(0);
        for (const column of ['consumer', 'messageId', 'type', 'exchange', 'routingKey'] as const) expectStorable(column, row[column]);
        for (const column of ['bizKey', 'orderingKey'] as const) if (row[column] !== null) expectStorable(column, row[column]);
      }),
      { numRuns: 1_000 },
    );
  });

  it('answers 413 exactly when the body has more bytes than maxBodyBytes', () => {
    fc.assert(
      fc.property(options, request, (chosen, sent) => {
        const definition = definitionOf(chosen);
        const identified = identifyWebhook(definition, sent);
        const status = 'refusal' in identified ? identified.refusal.status : 200;
        expect(status === 413).toBe(sent.rawBody.length > definition.maxBodyBytes);
      }),
      { numRuns: 500 },
    );
  });

  it('stores, when it accepts, the body as its bytes decode in UTF-8, and of the headers only the kept ones and content-type', () => {
    fc.assert(
      fc.property(options, request, (chosen, sent) => {
        const definition = definitionOf(chosen);
        const identified = identifyWebhook(definition, sent);
        if ('refusal' in identified) return;
        const { row } = identified;
        expect(row.payload).toBe(sent.rawBody.toString('utf8'));
        expect(Buffer.from(row.payload, 'utf8').equals(sent.rawBody)).toBe(true);
        const stored = JSON.parse(row.headers) as Record<string, unknown>;
        const expected = [...definition.keptHeaders].filter((name) => Object.prototype.hasOwnProperty.call(sent.headers, name));
        expect(Object.keys(stored).sort()).toEqual(expected.sort());
        expect(definition.keptHeaders.has('content-type')).toBe(true);
        expect(row.headers.includes('\u0000') || !isWellFormed(row.headers)).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
});

describe('resolveWebhookInbox', () => {
  it('resolves defaults: the class and method as consumer, the webhook-id header, status 200, the Standard Webhooks headers kept', () => {
    const { definition, problems } = resolveWebhookInbox({ headers: ['X-Github-Delivery'] }, DEFAULTS, WHERE);
    expect(problems).toEqual([]);
    expect(definition).toMatchObject({
      consumer: 'PaymentWebhooks.onPayment',
      where: WHERE,
      messageIdSource: 'header "webhook-id"',
      maxAttempts: 5,
      maxBodyBytes: 1_048_576,
    });
    expect([...definition!.keptHeaders].sort()).toEqual(['content-type', 'x-github-delivery']);
    expect([...definitionOf({}).keptHeaders].sort()).toEqual(['content-type', 'webhook-id', 'webhook-signature', 'webhook-timestamp']);
  });

  it.each<[string, string, unknown]>([
    ['consumer', 'too long', { consumer: 'c'.repeat(201) }],
    ['consumer', 'with a NUL', { consumer: 'pay\u0000ments' }],
    ['consumer', 'empty', { consumer: '' }],
    ['messageId', 'an empty object', { messageId: {} }],
    ['messageId', 'a header name with a space', { messageId: { header: 'webhook id' } }],
    ['messageId', 'both header and bodyField', { messageId: { header: 'webhook-id', bodyField: 'id' } }],
    ['messageId', 'an empty bodyField', { messageId: { bodyField: '' } }],
    ['messageId', 'a bare string', { messageId: 'webhook-id' }],
    ['type', 'a number', { type: 42 }],
    ['bizKey', 'a string', { bizKey: 'order-1' }],
    ['orderingKey', 'an object', { orderingKey: { header: 'x' } }],
    ['status', '201', { status: 201 }],
    ['status', '"200"', { status: '200' }],
    ['maxAttempts', '0', { maxAttempts: 0 }],
    ['maxAttempts', '1001', { maxAttempts: 1_001 }],
    ['maxAttempts', '1.5', { maxAttempts: 1.5 }],
    ['maxBodyBytes', '0', { maxBodyBytes: 0 }],
    ['maxBodyBytes', 'Infinity', { maxBodyBytes: Infinity }],
    ['headers', 'a name with a space', { headers: ['webhook id'] }],
    ['headers', 'an empty name', { headers: ['webhook-id', ''] }],
    ['headers', 'a name with a NUL', { headers: ['x-\u0000'] }],
    ['headers', 'a string, not an array', { headers: 'webhook-id' }],
    ['headers', 'a number among the names', { headers: [42] }],
    ['consumer', 'a lone surrogate', { consumer: 'payments-\ud800' }],
  ])('refuses %s %s, naming it', (name, _, bad) => {
    const { definition, problems } = resolveWebhookInbox(bad as WebhookInboxOptions, DEFAULTS, WHERE);
    expect(definition).toBeUndefined();
    expect(problems).toEqual([expect.stringMatching(new RegExp(`^@WebhookInbox on PaymentWebhooks\\.onPayment: ${name} must `))]);
  });

  it('refuses an option it does not know, a typo that would otherwise pass unnoticed', () => {
    expect(resolveWebhookInbox({ maxAttempt: 3 } as WebhookInboxOptions, DEFAULTS, WHERE).problems).toEqual([
      `${WHERE}: maxAttempt is not an option of @WebhookInbox()`,
    ]);
  });

  it('names every bad option at once', () => {
    const { definition, problems } = resolveWebhookInbox(
      { consumer: '', messageId: {} as never, status: 204 as never, maxAttempts: 0, maxBodyBytes: 0, headers: ['a b'] },
      DEFAULTS,
      WHERE,
    );
    expect(definition).toBeUndefined();
    expect(problems.map((problem) => problem.slice(WHERE.length + 2).split(' ')[0])).toEqual([
      'consumer',
      'messageId',
      'maxAttempts',
      'status',
      'maxBodyBytes',
      'headers',
    ]);
  });

  it('never throws, for options of any shape', () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            consumer: fc.anything(),
            messageId: fc.anything(),
            type: fc.anything(),
            bizKey: fc.anything(),
            orderingKey: fc.anything(),
            maxAttempts: fc.anything(),
            status: fc.anything(),
            maxBodyBytes: fc.anything(),
            headers: fc.anything(),
          },
          { requiredKeys: [] },
        ),
        (anything) => {
          const { definition, problems } = resolveWebhookInbox(anything as WebhookInboxOptions, DEFAULTS, WHERE);
          expect(definition === undefined).toBe(problems.length > 0);
        },
      ),
    );
  });
});
