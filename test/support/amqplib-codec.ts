/*
 * amqplib's own field-table codec, the one that encodes a message's headers on publish and
 * decodes them for a consumer: the oracle for what the outbox computes without calling it.
 */

interface FieldTableCodec {
  encodeTable(buffer: Buffer, value: unknown, offset: number): number;
  decodeFields(slice: Buffer): Record<string, unknown>;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const codec = require('amqplib/lib/codec') as FieldTableCodec;

/** Larger than any table the tests build, unlike amqplib's own 64 KiB scratch buffer. */
const buffer = Buffer.alloc(4 * 1024 * 1024);

/**
 * Encodes `table` as amqplib does (throwing what it throws) and decodes it back as a consumer
 * would. `size` includes the table's 4-byte length.
 */
export function amqplibRoundTrip(table: object): { size: number; decoded: Record<string, unknown> } {
  const size = codec.encodeTable(buffer, table, 0);
  return { size, decoded: codec.decodeFields(buffer.subarray(4, size)) };
}

/**
 * JSON with object keys sorted, for comparing values whatever their key order. Only own
 * enumerable keys count, so a `__proto__` that became a prototype on decoding shows as missing.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
