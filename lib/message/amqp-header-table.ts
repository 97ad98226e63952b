import { OutboxMessageInvalidError } from '../errors';
import { AMQP_HEADERS_MAX_BYTES, AMQP_SHORT_STRING_MAX_BYTES, DELIVERY_HEADERS_RESERVED_BYTES, HEADERS_MAX_DEPTH } from './message-limits';
import { malformedTextReason } from './message-text';

/*
 * Sizes as amqplib 0.10's codec (`encodeTable`, `encodeFieldValue`) writes a field table: a
 * 4-byte length before every table, array and string, a 1-byte type tag before every value, a
 * 1-byte length before every name. Numbers are written as amqplib guesses their type.
 */
const LENGTH = 4;
const TAG = 1;
const NAME_LENGTH = 1;

/** Magnitudes from which amqplib writes every number that is not ≥ 2^63 as a 64-bit integer. */
const INTEGER_ONLY_FROM = 2 ** 50;
const INT64_MIN = -(2 ** 63);
const DOUBLE_FROM = 2 ** 63;

/** Headers RabbitMQ reads as extra routing keys (sender-selected distribution); it closes the channel when one is not an array. */
const ROUTING_HEADERS = ['CC', 'BCC'];

type Path = (string | number)[];

/**
 * Checks headers as they will be sent (the JSON round trip of what was given, as it is stored)
 * and returns the bytes amqplib will encode them to. Refuses what amqplib cannot encode, what it
 * would send as something else, what its decoder loses on arrival, and what RabbitMQ refuses.
 * Leaves room for the delivery headers every send adds.
 * @throws OutboxMessageInvalidError naming the header at fault
 */
export function encodedHeadersSize(headers: object): number {
  const size = encodedHeaderTableSize(headers, AMQP_HEADERS_MAX_BYTES - DELIVERY_HEADERS_RESERVED_BYTES);
  for (const name of ROUTING_HEADERS) {
    const routes = (headers as Record<string, unknown>)[name];
    if (routes !== undefined && !Array.isArray(routes)) {
      throw invalid(
        `${where([name])} must be an array of routing keys (RabbitMQ's sender-selected distribution); RabbitMQ closes the channel for ${routes === null ? 'null' : `a ${typeof routes}`}`,
      );
    }
  }
  return size;
}

/**
 * The part of `encodedHeadersSize` about amqplib alone, without RabbitMQ's rules: what the
 * transport checks again before publishing a row written without publish()'s checks, since
 * amqplib throws on such headers, or sends a corrupt frame for which the broker closes the whole
 * connection. What the broker refuses is left to the broker (it closes the channel, not the
 * connection).
 */
export function encodedHeaderTableSize(headers: object, maxBytes = AMQP_HEADERS_MAX_BYTES): number {
  const size = tableSize(headers, 1, []);
  if (size > maxBytes) {
    const limit =
      maxBytes === AMQP_HEADERS_MAX_BYTES
        ? `the ${maxBytes} bytes amqplib can send`
        : `${maxBytes} bytes (amqplib's ${AMQP_HEADERS_MAX_BYTES}, less ${AMQP_HEADERS_MAX_BYTES - maxBytes} kept for the delivery headers)`;
    throw invalid(`headers encode to ${size} bytes as an AMQP field table, more than ${limit}; move large values to the payload`);
  }
  return size;
}

function tableSize(table: object, depth: number, path: Path): number {
  let size = LENGTH;
  // for…in, as amqplib iterates.
  for (const name in table) {
    const value = (table as Record<string, unknown>)[name];
    if (value === undefined) continue;
    path.push(name);
    size += NAME_LENGTH + nameBytes(name, depth, path) + valueSize(value, depth, path);
    path.pop();
  }
  return size;
}

function nameBytes(name: string, depth: number, path: Path): number {
  if (name === '__proto__') {
    throw invalid(
      `${where(path)}: amqplib's decoder sets an object's prototype for a field named "__proto__" instead of a field, so the receiver would not get it; rename it`,
    );
  }
  // amqplib takes any nested table with an own "!" for a type annotation ({ "!": type, value }),
  // and looks for it through the table's own hasOwnProperty.
  if (depth > 1 && (name === '!' || name === 'hasOwnProperty')) {
    throw invalid(
      name === '!'
        ? `${where(path)}: amqplib reads a nested table with a "!" field as a type annotation ({ "!": type, value }), not as given; rename the field`
        : `${where(path)}: a nested table with a field named "hasOwnProperty" makes amqplib's encoder throw; rename the field`,
    );
  }
  const malformed = malformedTextReason(name);
  if (malformed) throw invalid(`the name of ${where(path)} ${malformed}`);
  const bytes = Buffer.byteLength(name);
  if (bytes > AMQP_SHORT_STRING_MAX_BYTES) {
    throw invalid(`the name of ${where(path)} is ${bytes} bytes in UTF-8, more than AMQP's ${AMQP_SHORT_STRING_MAX_BYTES}-byte short string`);
  }
  return bytes;
}

function valueSize(value: unknown, depth: number, path: Path): number {
  switch (typeof value) {
    case 'string': {
      const malformed = malformedTextReason(value);
      if (malformed) throw invalid(`${where(path)} ${malformed}`);
      return TAG + LENGTH + Buffer.byteLength(value);
    }
    case 'number':
      return TAG + numberBytes(value, path);
    case 'boolean':
      return TAG + 1;
    case 'object': {
      if (value === null) return TAG;
      if (depth + 1 > HEADERS_MAX_DEPTH) {
        throw invalid(`${where(path)} is nested deeper than the ${HEADERS_MAX_DEPTH} levels allowed in headers; move deep structures to the payload`);
      }
      return TAG + (Array.isArray(value) ? arraySize(value, depth + 1, path) : tableSize(value, depth + 1, path));
    }
    default:
      // JSON gives nothing else; anything else would not be what is stored.
      throw invalid(`${where(path)} is a ${typeof value}, which headers cannot carry`);
  }
}

function arraySize(array: unknown[], depth: number, path: Path): number {
  let size = LENGTH;
  for (let i = 0; i < array.length; i++) {
    path.push(i);
    size += valueSize(array[i], depth, path);
    path.pop();
  }
  return size;
}

/** Bytes after the tag, as amqplib's `isFloatingPoint` and integer ranges choose the encoding. */
function numberBytes(n: number, path: Path): number {
  if (n >= DOUBLE_FROM || (Math.abs(n) < INTEGER_ONLY_FROM && !Number.isInteger(n))) return 8;
  if (!Number.isInteger(n)) {
    throw invalid(
      `${where(path)} is ${n}: amqplib sends a number of magnitude 2^50 or more as a 64-bit integer, so it cannot send this fraction (it throws); send it as a string`,
    );
  }
  if (n < INT64_MIN) {
    throw invalid(`${where(path)} is ${n}, below -2^63: amqplib sends it as a 64-bit integer, which cannot hold it (it throws); send it as a string`);
  }
  if (n >= -0x80 && n < 0x80) return 1;
  if (n >= -0x8000 && n < 0x8000) return 2;
  if (n >= -0x80000000 && n < 0x80000000) return 4;
  return 8;
}

function invalid(reason: string): OutboxMessageInvalidError {
  return new OutboxMessageInvalidError(reason, 'headers');
}

/** `headers["a"][0]["b"]`, with long names cut, for error messages. */
function where(path: Path): string {
  return `headers${path.map((segment) => (typeof segment === 'number' ? `[${segment}]` : `[${quoted(segment)}]`)).join('')}`;
}

function quoted(name: string): string {
  const cut = name.length > 40 ? `${name.slice(0, 40)}…` : name;
  // JSON escapes control characters and lone surrogates, so the message stays printable.
  return JSON.stringify(cut);
}
