import fc from 'fast-check';
import { OutboxMessageInvalidError } from '../../lib';
import { encodedHeadersSize } from '../../lib/message/amqp-header-table';
import { AMQP_HEADERS_MAX_BYTES, DELIVERY_HEADERS_RESERVED_BYTES } from '../../lib/message/message-limits';
import { amqplibRoundTrip, canonicalJson } from '../support/amqplib-codec';
import { headers } from '../support/message-arbitraries';

/** What the outbox sends: the JSON round trip of the headers given (they are stored as JSON). */
const sentHeaders = headers.map((given) => JSON.parse(JSON.stringify(given ?? {})) as Record<string, unknown>);

/** Nesting levels of tables and arrays, the outermost table being level 1. */
function levels(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + children.reduce<number>((deepest, child) => Math.max(deepest, levels(child)), 0);
}

/** What amqplib encodes within its 64 KiB and decodes back to the same value, or undefined. */
function carriedAsGiven(table: Record<string, unknown>): number | undefined {
  let roundTrip;
  try {
    roundTrip = amqplibRoundTrip(table);
  } catch {
    return undefined;
  }
  return roundTrip.size <= 65_536 && canonicalJson(roundTrip.decoded) === canonicalJson(table) ? roundTrip.size : undefined;
}

describe('encodedHeadersSize, against amqplib’s own codec', () => {
  it('measures exactly what amqplib encodes, and what it accepts decodes to what was sent', () => {
    fc.assert(
      fc.property(sentHeaders, (table) => {
        let size: number;
        try {
          size = encodedHeadersSize(table);
        } catch (error) {
          expect(error).toBeInstanceOf(OutboxMessageInvalidError);
          expect((error as OutboxMessageInvalidError).field).toBe('headers');
          return;
        }
        const roundTrip = amqplibRoundTrip(table);
        expect(roundTrip.size).toBe(size);
        expect(size).toBeLessThanOrEqual(65_536);
        expect(canonicalJson(roundTrip.decoded)).toBe(canonicalJson(table));
      }),
      { numRuns: 3_000 },
    );
  });

  it('refuses nothing that amqplib and RabbitMQ carry as given within the nesting limit and the room publish() leaves', () => {
    // publish() keeps the last bytes of amqplib's 64 KiB for the delivery headers every send adds.
    const room = AMQP_HEADERS_MAX_BYTES - DELIVERY_HEADERS_RESERVED_BYTES;
    fc.assert(
      fc.property(sentHeaders, (table) => {
        const size = carriedAsGiven(table);
        const routingHeadersOk = ['CC', 'BCC'].every((name) => !(name in table) || Array.isArray(table[name]));
        if (size === undefined || size > room || !routingHeadersOk || levels(table) > 100) return;
        expect(encodedHeadersSize(table)).toBe(size);
      }),
      { numRuns: 3_000 },
    );
  });

  it('refuses a table amqplib could carry only in the room kept for the delivery headers', () => {
    const room = AMQP_HEADERS_MAX_BYTES - DELIVERY_HEADERS_RESERVED_BYTES;
    // One short-string header: 4 bytes of table length, 1 + 1 for its name, 1 for its type, 4 for its length.
    const filling = (bytes: number) => ({ h: 'x'.repeat(bytes - 11) });
    expect(encodedHeadersSize(filling(room))).toBe(room);
    expect(carriedAsGiven(filling(room + 1))).toBe(room + 1);
    expect(() => encodedHeadersSize(filling(room + 1))).toThrow(OutboxMessageInvalidError);
  });

  it('finds both outcomes in the generated tables', () => {
    // Guards the two properties above against a generator that stopped producing either side.
    const outcomes = fc.sample(sentHeaders, { numRuns: 2_000, seed: 42 }).map((table) => {
      try {
        encodedHeadersSize(table);
        return 'accepted';
      } catch {
        return 'refused';
      }
    });
    expect(outcomes.filter((o) => o === 'accepted').length).toBeGreaterThan(200);
    expect(outcomes.filter((o) => o === 'refused').length).toBeGreaterThan(200);
  });
});
