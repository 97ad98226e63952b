import type { AddressProblem, MessageAddress, OutgoingMessage } from '../../message/outbox-transport';

/**
 * Longest pattern, in UTF-8 bytes. The tightest of the brokers' own limits that a generic check
 * can apply: RabbitMQ's routing key (a short string, which Nest's RMQ client uses for the pattern
 * under `wildcards`) takes 255 bytes. Kafka allows 249 characters of [a-zA-Z0-9._-] in a topic
 * name and refuses others itself.
 */
export const MAX_PATTERN_BYTES = 255;

/**
 * No whitespace or control characters. NATS separates protocol fields by whitespace: a subject
 * `order placed` is sent as subject `order` with reply-to `placed`, and one with two spaces is a
 * protocol error on which the server closes the connection, under every other message too.
 * Kafka and MQTT topics refuse them as well; a Redis channel would take them, but a pattern that
 * works on one transport only is a trap when the client is swapped.
 */
const UNSAFE_CHARACTER = /[\s\p{Cc}]/u;

/** The pattern a message is emitted on: its `destination`, or its type when it has none. */
export function eventPattern(message: Pick<OutgoingMessage, 'destination' | 'type'>): string {
  return message.destination ? message.destination : message.type;
}

/**
 * What is wrong with a message's address for a `ClientProxy`, checked by `publish()`: the
 * pattern (its `destination`, else its type) must be one every Nest transport can carry.
 * `exchange` and `routingKey` are not looked at: a message may carry the addresses of several
 * transports, each reading its own.
 */
export function eventPatternProblem(address: MessageAddress): AddressProblem | undefined {
  const fromType = !address.destination;
  const pattern = eventPattern({ destination: address.destination ?? '', type: address.type });
  const source = fromType ? 'the type (the pattern, as destination is not set)' : 'destination (the pattern)';
  if (pattern.length === 0) return { field: 'destination', message: `${source} must not be empty` };
  if (Buffer.byteLength(pattern, 'utf8') > MAX_PATTERN_BYTES) {
    return { field: 'destination', message: `${source} must be at most ${MAX_PATTERN_BYTES} bytes of UTF-8` };
  }
  if (UNSAFE_CHARACTER.test(pattern)) return { field: 'destination', message: `${source} must not contain whitespace or control characters` };
  return undefined;
}
