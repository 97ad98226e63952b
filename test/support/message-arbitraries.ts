import fc, { Arbitrary } from 'fast-check';

/*
 * Random messages for property tests of `publish()`: mostly text that any database and AMQP
 * carry, mixed with what they do not (NUL, lone surrogates, text just over a byte or character
 * limit, header names amqplib treats specially, numbers it cannot encode, oversized and deeply
 * nested headers). The mix keeps both outcomes, refused and delivered, frequent.
 */

/** A message as generated, before the test gives it what must be unique (business key, message id). */
export interface MessageDraft {
  type: string;
  routingKey: string;
  bizKey?: string;
  orderingKey?: string;
  messageId?: string;
  maxAttempts?: number;
  headers?: Record<string, unknown>;
  payload: unknown;
}

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit));

/** Well-formed text without NUL: ASCII, any code point (astral ones included), or grapheme clusters. */
function cleanText(maxLength: number, minLength: number): Arbitrary<string> {
  return fc
    .oneof(
      { weight: 3, arbitrary: fc.string({ unit: 'binary-ascii', minLength, maxLength }) },
      { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength, maxLength }) },
      { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength, maxLength }) },
    )
    .map((text) => (minLength > 0 ? text.replace(/\u0000/g, 'n') : text.replace(/\u0000/g, '')));
}

/** Clean text with a NUL or a lone surrogate put in somewhere. */
function brokenText(maxLength: number): Arbitrary<string> {
  return fc.tuple(cleanText(maxLength, 0), fc.oneof(loneSurrogate, fc.constant('\u0000')), fc.nat()).map(([text, bad, at]) => {
    const cut = text.length === 0 ? 0 : at % (text.length + 1);
    return text.slice(0, cut) + bad + text.slice(cut);
  });
}

/** One character repeated to around 255 bytes or code points, so that lengths near each limit come up. */
function limitText(): Arbitrary<string> {
  return fc.tuple(fc.constantFrom('a', 'é', '€', '😀', '\u{10FFFF}'), fc.integer({ min: 50, max: 260 })).map(([character, count]) => character.repeat(count));
}

/** Text of a field; `nonEmpty` for fields where the empty string is refused (and generated only rarely). */
export function text(maxLength = 30, nonEmpty = false): Arbitrary<string> {
  return fc.oneof(
    { weight: 30, arbitrary: cleanText(maxLength, nonEmpty ? 1 : 0) },
    ...(nonEmpty ? [{ weight: 1, arbitrary: fc.constant('') }] : []),
    { weight: 1, arbitrary: brokenText(maxLength) },
    { weight: 1, arbitrary: limitText() },
  );
}

/** Numbers of every encoding amqplib chooses, and those it cannot encode. */
const headerNumber: Arbitrary<number> = fc.oneof(
  { weight: 4, arbitrary: fc.integer() },
  { weight: 2, arbitrary: fc.double({ min: -1e6, max: 1e6 }) },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.double({ min: -(2 ** 64), max: 2 ** 64 }) },
  { weight: 1, arbitrary: fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map(Number) },
  fc.constantFrom(
    127,
    128,
    -128,
    -129,
    32_768,
    -32_769,
    2 ** 31,
    -(2 ** 31) - 1,
    2 ** 50,
    2 ** 50 + 0.5,
    -(2 ** 52) - 0.5,
    2 ** 53 + 2,
    -(2 ** 63),
    -(2 ** 63) - 4_096,
    2 ** 63,
    -1e20,
    1e300,
    -1e300,
    5e-324,
  ),
);

const SPECIAL_NAMES = ['CC', 'BCC', '__proto__', 'hasOwnProperty', '!', 'value', 'constructor', 'toString', ''];

const headerName: Arbitrary<string> = fc.oneof({ weight: 12, arbitrary: text(20) }, { weight: 1, arbitrary: fc.constantFrom(...SPECIAL_NAMES) });

const headerLeaf: Arbitrary<unknown> = fc.oneof(
  { weight: 12, arbitrary: text(40) },
  { weight: 8, arbitrary: headerNumber },
  { weight: 2, arbitrary: fc.boolean() },
  { weight: 2, arbitrary: fc.constant(null) },
  { weight: 2, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.date() },
  // Around the 64 KiB of a header table.
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom('x', 'é'), fc.integer({ min: 20_000, max: 70_000 })).map(([c, bytes]) => c.repeat(bytes / Buffer.byteLength(c))),
  },
  // Around the nesting limit of 100 levels.
  { weight: 1, arbitrary: fc.integer({ min: 95, max: 102 }).map(nested) },
);

const { headerValue } = fc.letrec<{ headerValue: unknown; headerArray: unknown[]; headerTable: Record<string, unknown> }>((tie) => ({
  headerValue: fc.oneof({ depthSize: 'small', withCrossShrink: true }, headerLeaf, tie('headerArray'), tie('headerTable')),
  headerArray: fc.array(tie('headerValue'), { maxLength: 4 }),
  headerTable: fc.array(fc.tuple(headerName, tie('headerValue')), { maxLength: 4 }).map(ownObject),
}));

/** RabbitMQ's routing headers, usually as the arrays of routing keys it expects. */
const routingHeader = fc.tuple(fc.constantFrom('CC', 'BCC'), fc.oneof(fc.array(text(20), { maxLength: 3 }), headerLeaf));

export const headers: Arbitrary<Record<string, unknown> | undefined> = fc.option(
  fc.array(fc.oneof({ weight: 6, arbitrary: fc.tuple(headerName, headerValue) }, { weight: 1, arbitrary: routingHeader }), { maxLength: 6 }).map(ownObject),
  { nil: undefined },
);

const payloadText = fc.oneof(
  { weight: 8, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: loneSurrogate },
  { weight: 1, arbitrary: fc.constant('\u0000') },
);

export const payload: Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.jsonValue({ stringUnit: payloadText, maxDepth: 4 }) },
  { weight: 2, arbitrary: fc.anything({ maxDepth: 3, withDate: true, withNullPrototype: true }) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  // Around a test's small maxPayloadBytes (a few KiB), in multi-byte characters.
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('a', '€', '😀'), fc.integer({ min: 500, max: 5_000 })).map(([c, n]) => ({ blob: c.repeat(n) })) },
);

const maxAttempts: Arbitrary<number | undefined> = fc.option(
  fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 1, max: 1_000 }) },
    { weight: 1, arbitrary: fc.constantFrom(0, -1, 1_001, 1.5, 2 ** 31, 3e9, Number.NaN) },
  ),
  { nil: undefined },
);

export const messageDraft: Arbitrary<MessageDraft> = fc.record(
  {
    type: text(30, true),
    routingKey: text(),
    bizKey: text(30, true),
    orderingKey: text(30, true),
    messageId: fc.uuid(),
    maxAttempts,
    headers,
    payload,
  },
  { requiredKeys: ['type', 'routingKey', 'payload'] },
);

/** An object with exactly these own enumerable properties, `__proto__` included as a plain one. */
export function ownObject(entries: [string, unknown][]): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (const [name, value] of entries) Object.defineProperty(object, name, { value, enumerable: true, writable: true, configurable: true });
  return object;
}

/** `{ a: { a: … 1 } }` with `levels` tables, the outermost included. */
export function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = { a: 1 };
  for (let level = 1; level < levels; level++) value = { a: value };
  return value;
}
