import { NonRetryableError } from '../../lib/errors';
import { eventPattern, eventPatternProblem, MAX_PATTERN_BYTES } from '../../lib/transport/client-proxy/event-pattern';
import { outboxEnvelope } from '../../lib/transport/client-proxy/outbox-envelope';
import { OutgoingMessage } from '../../lib/message/outbox-transport';

const message = (overrides: Partial<OutgoingMessage> = {}): OutgoingMessage => ({
  messageId: '6f1c2b1e-8f4e-4a53-9d56-3f0c2a7b9e10',
  type: 'order.placed',
  transport: 'events',
  exchange: '',
  routingKey: '',
  destination: 'orders.placed',
  payload: '{"orderId":42,"lines":[{"sku":"A-1","quantity":2}],"note":null}',
  headers: { tenant: 'acme' },
  attempts: 2,
  createdAt: new Date('2026-03-04T05:06:07.089Z'),
  ...overrides,
});

describe('OutboxEnvelope', () => {
  it('carries the id, type, parsed payload, headers, attempt number and publishing time', () => {
    expect(outboxEnvelope(message())).toEqual({
      id: '6f1c2b1e-8f4e-4a53-9d56-3f0c2a7b9e10',
      type: 'order.placed',
      payload: { orderId: 42, lines: [{ sku: 'A-1', quantity: 2 }], note: null },
      headers: { tenant: 'acme', 'outbox-attempt': 3, 'outbox-published-at': '2026-03-04T05:06:07.089Z' },
      attempt: 3,
      publishedAt: '2026-03-04T05:06:07.089Z',
    });
  });

  it("puts the delivery headers over the publisher's, and leaves the message's own untouched", () => {
    const headers = { tenant: 'acme', 'outbox-attempt': 'spoofed' };
    const envelope = outboxEnvelope(message({ headers }));
    expect(envelope.headers).toEqual({ tenant: 'acme', 'outbox-attempt': 3, 'outbox-published-at': '2026-03-04T05:06:07.089Z' });
    expect(headers).toEqual({ tenant: 'acme', 'outbox-attempt': 'spoofed' });
  });

  it('carries payloads that are not objects', () => {
    expect(outboxEnvelope(message({ payload: '"text"' })).payload).toBe('text');
    expect(outboxEnvelope(message({ payload: 'null' })).payload).toBeNull();
  });

  it('refuses, as not retryable, a stored payload that is not JSON', () => {
    expect(() => outboxEnvelope(message({ payload: '{not json' }))).toThrow(NonRetryableError);
  });
});

describe('eventPattern', () => {
  it('is the destination, or the type when there is none', () => {
    expect(eventPattern(message())).toBe('orders.placed');
    expect(eventPattern(message({ destination: '' }))).toBe('order.placed');
  });
});

describe('eventPatternProblem', () => {
  it('accepts a destination, and a type alone', () => {
    expect(eventPatternProblem({ type: 'order.placed', destination: 'orders.placed' })).toBeUndefined();
    expect(eventPatternProblem({ type: 'order.placed' })).toBeUndefined();
    expect(eventPatternProblem({ type: 'order.placed', exchange: '', routingKey: '', destination: '' })).toBeUndefined();
  });

  it("ignores RabbitMQ's address, which a message may carry for another transport", () => {
    expect(eventPatternProblem({ type: 'order.placed', exchange: 'orders', routingKey: 'order.placed', destination: 'orders.placed' })).toBeUndefined();
  });

  it(`refuses a pattern longer than ${MAX_PATTERN_BYTES} bytes of UTF-8, counting bytes, not characters`, () => {
    expect(eventPatternProblem({ type: 't', destination: 'a'.repeat(MAX_PATTERN_BYTES) })).toBeUndefined();
    expect(eventPatternProblem({ type: 't', destination: 'a'.repeat(MAX_PATTERN_BYTES + 1) })?.field).toBe('destination');
    // 128 two-byte characters: 256 bytes.
    expect(eventPatternProblem({ type: 't', destination: 'é'.repeat(128) })?.message).toMatch(/bytes/);
    expect(eventPatternProblem({ type: 'é'.repeat(128) })?.message).toMatch(/^the type/);
  });

  it('refuses whitespace and control characters, which NATS would read as protocol separators', () => {
    for (const destination of ['order placed', 'order\tplaced', 'order\nplaced', 'order\u0000placed', 'order\u00a0placed']) {
      expect(eventPatternProblem({ type: 't', destination })).toEqual({ field: 'destination', message: expect.stringContaining('whitespace') });
    }
    expect(eventPatternProblem({ type: 'order placed' })?.message).toMatch(/^the type/);
  });
});
