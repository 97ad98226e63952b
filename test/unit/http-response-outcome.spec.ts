import fc from 'fast-check';
import { NonRetryableError, OutboxOptionsError, RetryLaterError } from '../../lib';
import { classifyFailure } from '../../lib/retry/error-classifier';
import { HttpOutboxTransport } from '../../lib/transport/http/http-outbox.transport';
import { HttpEndpoint, httpTransportOptionProblems } from '../../lib/transport/http/http-endpoint';
import { QUOTED_BODY_CHARACTERS, responseOutcome, retryAfterMs } from '../../lib/transport/http/http-response-outcome';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const outcome = (status: number, options: { retryAfter?: string; body?: string } = {}) =>
  responseOutcome(status, options.retryAfter ?? null, options.body ?? '', 'partner', NOW);

describe('responseOutcome', () => {
  it('counts any 2xx as delivered, whatever the body says', () => {
    for (const status of [200, 201, 202, 204, 299]) expect(outcome(status, { body: '{"error":"ignored"}' })).toBeUndefined();
  });

  it('sends a redirect to MANUAL_REQUIRED, saying that redirects are not followed', () => {
    for (const status of [301, 302, 303, 307, 308]) {
      const error = outcome(status, { body: 'moved' });
      expect(error).toBeInstanceOf(NonRetryableError);
      expect(error!.message).toContain(`endpoint "partner" answered HTTP ${status}: moved`);
      expect(error!.message).toMatch(/redirects are not followed: configure the final URL/);
    }
  });

  it('sends a 4xx that retrying cannot change to MANUAL_REQUIRED, with the status and the start of the body', () => {
    for (const status of [400, 401, 403, 404, 410, 422]) {
      const error = outcome(status, { body: '{"error":"unknown order"}' });
      expect(error).toBeInstanceOf(NonRetryableError);
      expect(classifyFailure(error)).toBe('fatal');
      expect(error!.message).toBe(`endpoint "partner" answered HTTP ${status}: {"error":"unknown order"}`);
      expect(error!.message).not.toMatch(/redirect/);
    }
    expect(outcome(404)!.message).toBe('endpoint "partner" answered HTTP 404');
  });

  it('escapes and cuts a hostile body, so that it can neither forge a log line nor fill last_error', () => {
    const body = `gone\nERROR forged line\r\u0000\u001b[31m\u202e${'x'.repeat(5_000)}`;
    const message = outcome(410, { body })!.message;
    expect(message).not.toMatch(/[\r\n\u0000\u001b\u202e]/);
    expect(message).toContain('gone\\u000aERROR forged line\\u000d\\u0000\\u001b[31m\\u202e');
    expect(message).toMatch(/…\(\d+ more characters\)$/);
    expect(message.length).toBeLessThan(QUOTED_BODY_CHARACTERS * 6 + 100);
  });

  it('retries 408, 425, 429 and 5xx with a plain error when no Retry-After says when', () => {
    for (const status of [408, 425, 429, 500, 502, 503, 504, 599]) {
      const error = outcome(status, { body: 'busy' });
      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(NonRetryableError);
      expect(error).not.toBeInstanceOf(RetryLaterError);
      expect(classifyFailure(error)).toBe('retry');
      expect(error!.message).toBe(`endpoint "partner" answered HTTP ${status}: busy`);
    }
  });

  it('retries no sooner than a Retry-After in delta-seconds asks', () => {
    for (const status of [408, 425, 429, 500, 502, 503]) {
      const error = outcome(status, { retryAfter: '120' });
      expect(error).toBeInstanceOf(RetryLaterError);
      expect(classifyFailure(error)).toBe('retry');
      expect((error as RetryLaterError).retryAfterMs).toBe(120_000);
      expect(error!.message).toBe(`endpoint "partner" answered HTTP ${status} (Retry-After: 120)`);
    }
    expect((outcome(503, { retryAfter: ' 0 ' }) as RetryLaterError).retryAfterMs).toBe(0);
  });

  it('retries no sooner than a Retry-After HTTP date asks, and at once for a date gone by', () => {
    const in30s = new Date(NOW + 30_000).toUTCString();
    expect((outcome(503, { retryAfter: in30s }) as RetryLaterError).retryAfterMs).toBe(30_000);
    expect((outcome(429, { retryAfter: 'Sun, 06 Nov 1994 08:49:37 GMT' }) as RetryLaterError).retryAfterMs).toBe(0);
  });

  it('retries with a plain error when Retry-After cannot be read, quoting it nowhere', () => {
    for (const retryAfter of ['soon', '-1', '1.5', '', '0x10']) {
      const error = outcome(503, { retryAfter });
      expect(error).not.toBeInstanceOf(RetryLaterError);
      expect(error!.message).toBe('endpoint "partner" answered HTTP 503');
    }
  });

  it('never asks to wait for a status that is not retried', () => {
    expect(outcome(404, { retryAfter: '120' })).not.toBeInstanceOf(RetryLaterError);
    expect(outcome(302, { retryAfter: '120' })).toBeInstanceOf(NonRetryableError);
  });
});

describe('retryAfterMs', () => {
  it('reads delta-seconds, surrounding spaces allowed', () => {
    expect(retryAfterMs('2', NOW)).toBe(2_000);
    expect(retryAfterMs(' 86400 ', NOW)).toBe(86_400_000);
    expect(retryAfterMs(null, NOW)).toBeUndefined();
  });

  it('reads the three HTTP date formats', () => {
    const at = NOW + 90_000;
    const date = new Date(at);
    expect(retryAfterMs(date.toUTCString(), NOW)).toBe(90_000);
    expect(retryAfterMs('Tuesday, 01-Jan-30 00:01:30 GMT', NOW)).toBe(90_000);
    // asctime carries no zone; RFC 9110 means GMT, whatever the server's zone.
    expect(retryAfterMs('Tue Jan  1 00:01:30 2030', NOW)).toBe(90_000);
  });

  it('ignores what is neither delta-seconds nor a date', () => {
    for (const garbage of [
      '',
      '   ',
      'soon',
      'now',
      'Infinity',
      'NaN',
      '-5',
      '+5',
      '1.5',
      '1e3',
      '0x10',
      '5s',
      '12345678901',
      '1 2',
      'Tue 2099',
      'foo 2',
      'Tue, 01 Jan 2030 00:01:30',
      'Tue, 01 Jan 2030 00:01:30 +0100',
      '2030-01-01T00:01:30Z',
    ]) {
      expect(retryAfterMs(garbage, NOW)).toBeUndefined();
    }
  });

  it('never throws and never returns a negative or non-finite wait, whatever the header holds', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: 'binary', maxLength: 80 }), fc.string({ unit: 'grapheme', maxLength: 80 })),
        fc.integer({ min: 0, max: 4e12 }),
        (value, now) => {
          const ms = retryAfterMs(value, now);
          return ms === undefined || (Number.isFinite(ms) && ms >= 0);
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('turns any delta-seconds into as many thousand milliseconds', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 9_999_999_999 }),
        fc.constantFrom('', ' ', '\t'),
        (seconds, pad) => retryAfterMs(`${pad}${seconds}${pad}`, NOW) === seconds * 1_000,
      ),
    );
  });

  it('turns any HTTP date into the wait until it, 0 once it has passed', () => {
    const dates = fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2200-01-01T00:00:00Z'), noInvalidDate: true });
    fc.assert(fc.property(dates, (date) => retryAfterMs(date.toUTCString(), NOW) === Math.max(0, Math.floor(date.getTime() / 1_000) * 1_000 - NOW)));
  });

  it('ignores numbers of any other shape: signed, fractional, in exponent form, or with a unit', () => {
    const numbers = fc.oneof(
      fc.integer({ min: 1, max: 1e9 }).map((n) => `-${n}`),
      fc
        .double({ noNaN: true, noDefaultInfinity: true })
        .filter((x) => !Number.isInteger(x))
        .map(String),
      fc.integer({ min: 0, max: 1e6 }).map((n) => `${n}.0`),
      fc.integer({ min: 0, max: 1e6 }).chain((n) => fc.constantFrom(`${n}s`, `${n} s`, `${n}ms`, `${n}e2`, `${n},5`)),
    );
    fc.assert(fc.property(numbers, (value) => retryAfterMs(value, NOW) === undefined));
  });
});

describe('httpTransportOptionProblems', () => {
  const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const problemsOf = (endpoint: Partial<HttpEndpoint>) =>
    httpTransportOptionProblems({ endpoints: { partner: { url: 'https://partner.example/hooks', ...endpoint } } });

  it('accepts http and https endpoints with headers, a timeout and a secret', () => {
    expect(problemsOf({ headers: { authorization: 'Bearer t', 'X-Tenant': 'a' }, timeoutMs: 500, secret: SECRET })).toEqual([]);
    expect(httpTransportOptionProblems({ endpoints: { a: { url: 'http://127.0.0.1:8080/x' }, b: { url: 'https://b.example' } } })).toEqual([]);
  });

  it('asks for named endpoints', () => {
    for (const options of [undefined, null, {}, { endpoints: null }, { endpoints: 'https://x.example' }]) {
      expect(httpTransportOptionProblems(options as never)).toEqual(['endpoints must be an object of named endpoints: { endpoints: { partner: { url } } }']);
    }
    expect(httpTransportOptionProblems({ endpoints: {} })).toEqual(['endpoints must name at least one endpoint']);
    expect(httpTransportOptionProblems({ endpoints: { partner: null as never } })).toEqual(['endpoints.partner must be an object with a url']);
  });

  it('names a URL that is not absolute http or https', () => {
    for (const url of ['not a url', '/hooks', '', undefined])
      expect(problemsOf({ url: url })).toEqual(['endpoints.partner.url must be an absolute http: or https: URL']);
    for (const url of ['ftp://partner.example/hooks', 'file:///etc/passwd', 'javascript:alert(1)'])
      expect(problemsOf({ url })).toEqual(['endpoints.partner.url must be an http: or https: URL']);
  });

  it('refuses credentials in the URL without quoting them', () => {
    for (const url of ['https://user:hunter2@partner.example/hooks', 'https://hunter2@partner.example/hooks']) {
      const problems = problemsOf({ url });
      expect(problems).toEqual(['endpoints.partner.url must not hold credentials: send them in headers']);
      expect(problems.join()).not.toContain('hunter2');
    }
  });

  it('refuses header names that are not tokens, and the headers the transport sets itself', () => {
    expect(problemsOf({ headers: { 'bad name': 'x' } })).toEqual(['endpoints.partner.headers: "bad name" is not an HTTP header name']);
    expect(problemsOf({ headers: { '': 'x' } })).toEqual(['endpoints.partner.headers: "" is not an HTTP header name']);
    expect(problemsOf({ headers: { 'x:y': 'x' } })).toEqual(['endpoints.partner.headers: "x:y" is not an HTTP header name']);
    for (const name of [
      'Content-Type',
      'content-length',
      'Host',
      'webhook-id',
      'Webhook-Timestamp',
      'webhook-signature',
      'Idempotency-Key',
      'Transfer-Encoding',
      'expect',
      'Upgrade',
      'keep-alive',
      'connection',
    ]) {
      expect(problemsOf({ headers: { [name]: 'x' } })).toEqual([`endpoints.partner.headers: ${name} is set by the transport`]);
    }
  });

  it('refuses header values that could inject headers or that fetch cannot send, without quoting them', () => {
    const refused = 'endpoints.partner.headers.x-tenant must be a string of tabs, printable ASCII and Latin-1 characters';
    for (const value of ['a\r\nX-Injected: 1', 'a\nb', 'a\rb', 'a\u0000b', 'Bearer tök€n', 'emoji 🙂']) {
      const problems = problemsOf({ headers: { 'x-tenant': value } });
      expect(problems).toEqual([refused]);
      expect(problems.join()).not.toContain('Injected');
    }
    expect(problemsOf({ headers: { 'x-tenant': 42 as never } })).toEqual([refused]);
    expect(problemsOf({ headers: { 'x-tenant': 'Bearer tök\tn' } })).toEqual([]);
  });

  it('asks for a positive whole number of milliseconds as the timeout', () => {
    for (const timeoutMs of [0, -1, 1.5, NaN, Infinity, '500']) {
      expect(problemsOf({ timeoutMs: timeoutMs as number })).toEqual(['endpoints.partner.timeoutMs must be a positive integer of milliseconds']);
    }
    expect(problemsOf({ timeoutMs: 1 })).toEqual([]);
  });

  it('names a bad secret and never quotes it', () => {
    const cases: [unknown, RegExp][] = [
      ['whsec_not base64 at all!', /^endpoints\.partner\.secret is not base64/],
      ['whsk_c2VjcmV0LWtleS1tYXRlcmlhbA==', /^endpoints\.partner\.secret is an asymmetric \(v1a\) key/],
      ['whsec_', /^endpoints\.partner\.secret is empty$/],
      [42, /^endpoints\.partner\.secret must be a string/],
    ];
    for (const [secret, problem] of cases) {
      const problems = problemsOf({ secret: secret as string });
      expect(problems).toEqual([expect.stringMatching(problem)]);
      if (typeof secret === 'string' && secret.length > 6) expect(problems.join()).not.toContain(secret.slice(6));
    }
  });

  it('reports every problem of every endpoint, each under its name', () => {
    const problems = httpTransportOptionProblems({
      endpoints: {
        billing: { url: 'ftp://billing.example', timeoutMs: 0 },
        logistics: { url: 'https://logistics.example', headers: { host: 'evil.example' }, secret: 'whsec_!!' },
        fine: { url: 'https://fine.example' },
      },
    });
    expect(problems).toEqual([
      'endpoints.billing.url must be an http: or https: URL',
      'endpoints.billing.timeoutMs must be a positive integer of milliseconds',
      'endpoints.logistics.headers: host is set by the transport',
      expect.stringMatching(/^endpoints\.logistics\.secret is not base64/),
    ]);
  });

  it('fails HttpOutboxTransport.for() where the module is declared, secrets unquoted', () => {
    const secret = 'whsec_this is not base64 but it is secret';
    const declare = () => HttpOutboxTransport.for({ endpoints: { partner: { url: 'ftp://partner.example', secret } } });
    expect(declare).toThrow(OutboxOptionsError);
    expect(declare).toThrow(
      /HttpOutboxTransport endpoints\.partner\.url must be an http: or https: URL; HttpOutboxTransport endpoints\.partner\.secret is not base64/,
    );
    try {
      declare();
    } catch (error) {
      expect((error as Error).message).not.toContain('this is not base64 but it is secret');
    }
  });
});
