import fc from 'fast-check';
import { OutboxOptionsError } from '../../lib/errors';
import { WebhookOptionsError } from '../../lib/errors/options.errors';
import { signWebhook, verifyWebhook, WebhookHeaders } from '../../lib/transport/http/standard-webhooks';

/**
 * The known answer every reference implementation checks in its "sign function works" test:
 * github.com/standard-webhooks/standard-webhooks, libraries/javascript/src/webhook.test.ts,
 * libraries/python/tests/test_webhooks.py (test_sign_function), libraries/php/tests/WebhookTest.php,
 * libraries/ruby/spec/webhook_spec.rb and libraries/csharp/StandardWebhooks.Tests/WebhookTest.cs.
 */
const known = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
/** The wrong signature of the Go reference's "valid multi sig is valid" case (libraries/go/webhook_test.go). */
const unrelated = 'Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=';

const at = (seconds: number) => new Date(seconds * 1000);
const headersOf = (id: string, timestamp: number | string, signature: string): WebhookHeaders => ({
  'webhook-id': id,
  'webhook-timestamp': String(timestamp),
  'webhook-signature': signature,
});
const knownHeaders = headersOf(known.id, known.timestamp, known.signature);
const verifyKnown = (headers: WebhookHeaders, extra: { secrets?: string | string[]; now?: Date } = {}) =>
  verifyWebhook({ headers, body: known.body, secrets: known.secret, now: at(known.timestamp), ...extra });

const secretOf = (key: Uint8Array) => `whsec_${Buffer.from(key).toString('base64')}`;
const keys = fc.uint8Array({ minLength: 1, maxLength: 64 });
/**
 * What HMAC-SHA256 makes of a key of at most its 64-byte block: the key padded with zero bytes.
 * Keys that differ only in trailing zero bytes ([0, 0] and [0]) are one key to it.
 */
function hmacKey(key: Uint8Array): string {
  let end = key.length;
  while (end > 0 && key[end - 1] === 0) end--;
  return Buffer.from(key.subarray(0, end)).toString('hex');
}
const ids = fc.stringMatching(/^[\x21-\x2d\x2f-\x7e]{1,64}$/);
const timestamps = fc.integer({ min: 0, max: 4_000_000_000 });
const bodies = fc.uint8Array({ maxLength: 2_048 }).map((bytes) => Buffer.from(bytes));

describe('signWebhook', () => {
  it('gives the reference implementations’ signature for their known answer', () => {
    expect(signWebhook(known)).toBe(known.signature);
    expect(signWebhook({ ...known, body: Buffer.from(known.body) })).toBe(known.signature);
    expect(signWebhook({ ...known, secret: known.secret.slice('whsec_'.length) })).toBe(known.signature);
  });

  it('reads a secret with or without its base64 padding alike (as the Python reference does)', () => {
    const padded = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS=';
    expect(signWebhook({ ...known, secret: padded })).toBe(signWebhook({ ...known, secret: padded.slice(0, -1) }));
  });

  it.each([
    ['an empty secret', { secret: '' }, /secret is empty/],
    ['a bare prefix', { secret: 'whsec_' }, /secret is empty/],
    ['a secret that is not base64', { secret: 'whsec_not base64!' }, /secret is not base64/],
    ['a base64 secret of impossible length', { secret: 'whsec_MfKQ9' }, /secret is not base64/],
    ['an asymmetric key', { secret: 'whpk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }, /asymmetric \(v1a\) key/],
    ['an id holding a full stop', { id: 'msg.1' }, /id must be/],
    ['an empty id', { id: '' }, /id must be/],
    ['a fractional timestamp', { timestamp: 1.5 }, /timestamp must be whole seconds/],
    ['a timestamp in milliseconds beyond any clock', { timestamp: 1e15 }, /timestamp must be whole seconds/],
    ['a parsed body', { body: { test: 2432232314 } as never }, /body must be the bytes as sent/],
  ])('refuses %s, naming the option and never quoting the secret', (_, change, message) => {
    const sign = () => signWebhook({ ...known, ...change });
    expect(sign).toThrow(WebhookOptionsError);
    expect(sign).toThrow(OutboxOptionsError);
    expect(sign).toThrow(message);
    expect(sign).not.toThrow(/MfKQ9/);
  });
});

describe('verifyWebhook', () => {
  it('accepts the known answer, returning its id and timestamp', () => {
    expect(verifyKnown(knownHeaders)).toEqual({ ok: true, id: known.id, timestamp: known.timestamp });
  });

  it('finds the v1 signature among others, skipping other versions (the spec’s and the Go reference’s example)', () => {
    const header = [`v1,${unrelated}`, `v2,${unrelated}`, known.signature, `v1a,${unrelated}`].join(' ');
    expect(verifyKnown(headersOf(known.id, known.timestamp, header)).ok).toBe(true);
    expect(verifyKnown(headersOf(known.id, known.timestamp, `v1,${unrelated} v1, v1`)).ok).toBe(false);
  });

  it('looks headers up whatever their case, and takes a repeated header with one value', () => {
    const mixed = { 'Webhook-Id': known.id, 'WEBHOOK-TIMESTAMP': String(known.timestamp), 'webhook-Signature': [known.signature, known.signature] };
    expect(verifyKnown(mixed).ok).toBe(true);
  });

  it.each<[string, WebhookHeaders, string]>([
    ['no headers', {}, 'missing-headers'],
    ['an empty id', { ...knownHeaders, 'webhook-id': '' }, 'missing-headers'],
    ['no signature', { ...knownHeaders, 'webhook-signature': undefined }, 'missing-headers'],
    ['an id repeated with two values', { ...knownHeaders, 'webhook-id': [known.id, 'msg_other'] }, 'malformed'],
    ['an id under two spellings with two values', { ...knownHeaders, 'Webhook-ID': 'msg_other' }, 'malformed'],
    ['a timestamp with a fraction', { ...knownHeaders, 'webhook-timestamp': '1614265330.0' }, 'malformed'],
    ['a timestamp with a leading zero', { ...knownHeaders, 'webhook-timestamp': '01614265330' }, 'malformed'],
    ['a timestamp with trailing text', { ...knownHeaders, 'webhook-timestamp': '1614265330abc' }, 'malformed'],
    ['a negative timestamp', { ...knownHeaders, 'webhook-timestamp': '-1614265330' }, 'malformed'],
    ['an id with a NUL', { ...knownHeaders, 'webhook-id': 'msg\u0000' }, 'malformed'],
    ['an id with a full stop', { ...knownHeaders, 'webhook-id': 'msg.1' }, 'malformed'],
    ['a non-ASCII id', { ...knownHeaders, 'webhook-id': 'msg_é' }, 'malformed'],
    ['an absurdly long id', { ...knownHeaders, 'webhook-id': 'm'.repeat(100_000) }, 'malformed'],
    ['an absurdly long signature header', { ...knownHeaders, 'webhook-signature': `${known.signature} `.repeat(10_000) }, 'malformed'],
    ['a truncated signature', { ...knownHeaders, 'webhook-signature': known.signature.slice(0, 8) }, 'no-matching-signature'],
    ['a bare version', { ...knownHeaders, 'webhook-signature': 'v1,' }, 'no-matching-signature'],
    ['a signature padded with junk', { ...knownHeaders, 'webhook-signature': `${known.signature}!!` }, 'no-matching-signature'],
  ])('refuses %s', (_, headers, reason) => {
    expect(verifyKnown(headers)).toEqual({ ok: false, reason });
  });

  it('refuses a timestamp more than the tolerance away either way, and accepts one at its edge', () => {
    const now = (offset: number) => at(known.timestamp + offset);
    expect(verifyKnown(knownHeaders, { now: now(300) }).ok).toBe(true);
    expect(verifyKnown(knownHeaders, { now: now(-300) }).ok).toBe(true);
    expect(verifyKnown(knownHeaders, { now: now(301) })).toEqual({ ok: false, reason: 'expired' });
    expect(verifyKnown(knownHeaders, { now: now(-301) })).toEqual({ ok: false, reason: 'future' });
    expect(verifyWebhook({ headers: knownHeaders, body: known.body, secrets: known.secret, now: now(3_600), toleranceSeconds: 3_600 }).ok).toBe(true);
  });

  it('verifies the bytes, not a re-serialization of them', () => {
    expect(verifyKnown(knownHeaders, {}).ok).toBe(true);
    const reserialized = JSON.stringify(JSON.parse(known.body));
    expect(verifyWebhook({ headers: knownHeaders, body: reserialized, secrets: known.secret, now: at(known.timestamp) })).toEqual({
      ok: false,
      reason: 'no-matching-signature',
    });
  });

  it.each([
    ['no secrets', { secrets: [] }, /secrets must be a "whsec_…" secret or a non-empty list/],
    ['a bad secret among good ones', { secrets: [known.secret, 'whsec_%%%'] }, /secrets\[1\] is not base64/],
    ['a zero tolerance', { toleranceSeconds: 0 }, /toleranceSeconds must be a positive number/],
    ['a tolerance that is not a number', { toleranceSeconds: NaN }, /toleranceSeconds must be a positive number/],
    ['a parsed body', { body: JSON.parse(known.body) }, /body must be the bytes as sent/],
  ])('throws WebhookOptionsError for %s: the caller’s mistake, not the request’s', (_, change, message) => {
    const verify = () => verifyWebhook({ headers: knownHeaders, body: known.body, secrets: known.secret, ...change });
    expect(verify).toThrow(WebhookOptionsError);
    expect(verify).toThrow(message);
  });
});

describe('signing and verifying, for any input', () => {
  it('verifies what it signed, for any bytes, id, timestamp and key, within the tolerance', () => {
    fc.assert(
      fc.property(bodies, ids, timestamps, keys, fc.integer({ min: -300, max: 300 }), (body, id, timestamp, key, skew) => {
        const secret = secretOf(key);
        const headers = headersOf(id, timestamp, signWebhook({ id, timestamp, body, secret }));
        expect(verifyWebhook({ headers, body, secrets: secret, now: at(timestamp + skew) })).toEqual({ ok: true, id, timestamp });
      }),
    );
  });

  it('refuses any one changed byte of the body, character of the id, or second of the timestamp', () => {
    const change = fc.oneof(
      fc.record({ kind: fc.constant('body' as const), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }),
      fc.record({ kind: fc.constant('id' as const), at: fc.nat(), to: fc.stringMatching(/^[\x21-\x2d\x2f-\x7e]$/) }),
      fc.record({ kind: fc.constant('timestamp' as const), by: fc.integer({ min: -300, max: 300 }).filter((by) => by !== 0) }),
    );
    fc.assert(
      fc.property(bodies, ids, timestamps, keys, change, (body, id, timestamp, key, c) => {
        const secret = secretOf(key);
        const signature = signWebhook({ id, timestamp, body, secret });
        let [sentBody, sentId, sentTimestamp] = [body, id, timestamp];
        if (c.kind === 'body') {
          if (body.length === 0) return;
          sentBody = Buffer.from(body);
          sentBody[c.at % body.length] ^= c.xor;
        } else if (c.kind === 'id') {
          const i = c.at % id.length;
          if (id[i] === c.to) return;
          sentId = id.slice(0, i) + c.to + id.slice(i + 1);
        } else {
          sentTimestamp = Math.max(0, timestamp + c.by);
          if (sentTimestamp === timestamp) return;
        }
        const headers = headersOf(sentId, sentTimestamp, signature);
        expect(verifyWebhook({ headers, body: sentBody, secrets: secret, now: at(timestamp) })).toEqual({ ok: false, reason: 'no-matching-signature' });
      }),
    );
  });

  it('accepts a signature by any of several secrets, and none by a secret rotated out', () => {
    fc.assert(
      fc.property(bodies, ids, timestamps, fc.uniqueArray(keys, { minLength: 3, maxLength: 3, selector: hmacKey }), (body, id, timestamp, [a, b, c]) => {
        const [retired, previous, current] = [a, b, c].map(secretOf);
        const verify = (signer: string, secrets: string[]) =>
          verifyWebhook({ headers: headersOf(id, timestamp, signWebhook({ id, timestamp, body, secret: signer })), body, secrets, now: at(timestamp) }).ok;
        expect(verify(previous, [current, previous])).toBe(true);
        expect(verify(current, [current, previous])).toBe(true);
        expect(verify(retired, [current, previous])).toBe(false);
        expect(verify(previous, [current])).toBe(false);
      }),
    );
  });

  it('refuses, as expired or future, a timestamp beyond the tolerance', () => {
    fc.assert(
      fc.property(ids, timestamps, fc.integer({ min: 1, max: 3_600 }), fc.integer({ min: 1, max: 1_000_000 }), (id, timestamp, tolerance, beyond) => {
        const headers = headersOf(id, timestamp, signWebhook({ id, timestamp, body: '', secret: known.secret }));
        const verify = (now: number) => verifyWebhook({ headers, body: '', secrets: known.secret, toleranceSeconds: tolerance, now: at(now) });
        expect(verify(timestamp + tolerance + beyond)).toEqual({ ok: false, reason: 'expired' });
        expect(verify(timestamp - tolerance - beyond)).toEqual({ ok: false, reason: 'future' });
      }),
    );
  });

  it('never throws whatever the headers hold, and accepts only the signed values', () => {
    const value = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.string({ unit: fc.constantFrom('v', '1', 'a', ',', ' ', '=', '\u0000', 'é', 'A', '/'), maxLength: 5_000 }),
      fc.array(fc.string({ maxLength: 50 }), { maxLength: 5 }),
      fc.constantFrom(undefined, 'x'.repeat(1_000_000), `${known.signature.slice(0, 3)}${'A'.repeat(50_000)}`, 'v1,=='),
      fc.anything(),
    );
    const name = fc.constantFrom('webhook-id', 'webhook-timestamp', 'webhook-signature', 'WEBHOOK-ID', 'Webhook-Signature', 'other');
    fc.assert(
      fc.property(fc.dictionary(name, value), fc.boolean(), (hostile, keepKnown) => {
        const headers = (keepKnown ? { ...knownHeaders, ...hostile } : hostile) as WebhookHeaders;
        const result = verifyKnown(headers);
        if (result.ok) expect(result).toEqual({ ok: true, id: known.id, timestamp: known.timestamp });
        if (keepKnown && Object.keys(hostile).every((key) => key === 'other')) expect(result.ok).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('bounds the work of a header packed with signatures', () => {
    const packed = Array.from({ length: 80 }, () => `v1,${unrelated}`).join(' ');
    expect(packed.length).toBeLessThanOrEqual(4_096);
    expect(verifyKnown(headersOf(known.id, known.timestamp, `${packed} ${known.signature}`)).ok).toBe(true);
    expect(verifyKnown(headersOf(known.id, known.timestamp, `${packed} ${packed}`))).toEqual({ ok: false, reason: 'malformed' });
  });
});
