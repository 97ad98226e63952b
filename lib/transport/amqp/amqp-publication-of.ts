import { NonRetryableError } from '../../errors';
import { encodedHeaderTableSize } from '../../message/amqp-header-table';
import { AMQP_SHORT_STRING_MAX_BYTES } from '../../message/message-limits';
import { refuseLineBreaks } from '../../message/message-text';
import { OutgoingMessage } from '../../message/outbox-transport';
import { hasHeaders, headersToSend } from '../delivery-headers';
import { AmqpPublication } from './confirm-publisher';

/** What the module's options say about each publication. */
export interface AmqpPublicationOptions {
  /** The AMQP `mandatory` flag. */
  mandatory: boolean;
  /** The delivery headers over the message's own (`deliveryHeaders`). */
  deliveryHeaders: boolean;
}

/**
 * The publication of `message` over AMQP: persistent, `messageId` and `type` set, JSON content,
 * the delivery headers over the message's own and `mandatory` as the module's options say. Throws
 * a `NonRetryableError` when amqplib could not encode it.
 */
export function amqpPublicationOf(message: OutgoingMessage, { mandatory, deliveryHeaders }: AmqpPublicationOptions): AmqpPublication {
  const publication: AmqpPublication = {
    messageId: message.messageId,
    exchange: message.exchange,
    routingKey: message.routingKey,
    content: Buffer.from(message.payload),
    options: {
      messageId: message.messageId,
      type: message.type,
      headers: headersToSend(message, deliveryHeaders),
      contentType: 'application/json',
      persistent: true,
      mandatory,
      timestamp: Math.floor(message.createdAt.getTime() / 1000),
    },
  };
  assertEncodable(message, publication.options.headers);
  return publication;
}

/** A message amqplib cannot encode (a row written without publish()'s checks): no retry can send it. */
export function unencodable(message: OutgoingMessage, error: unknown): NonRetryableError {
  return new NonRetryableError(`Message ${message.messageId} cannot be sent over AMQP as it is: ${(error as Error).message}`, { cause: error });
}

/**
 * Checks again what publish() checks about amqplib, for rows written without it (an older
 * version, a hand-written INSERT): amqplib throws on some of these, and on headers over 64 KB it
 * sends a corrupt frame, for which the broker closes the whole connection, consumers included.
 * Also a name with a line break: RabbitMQ strips CR and LF from the names it declares, so a
 * passive check finds an exchange the publication then misses, again and again.
 */
function assertEncodable(message: OutgoingMessage, headers: object | undefined): void {
  try {
    refuseLongShortString('exchange', message.exchange);
    refuseLongShortString('routingKey', message.routingKey);
    refuseLongShortString('type', message.type);
    if (message.exchange === '') refuseLineBreaks('routingKey', message.routingKey, 'queue');
    else refuseLineBreaks('exchange', message.exchange, 'exchange');
    // The delivery headers alone are a few dozen bytes: only a message's own need measuring.
    if (headers && hasHeaders(message.headers)) encodedHeaderTableSize(headers);
  } catch (error) {
    throw unencodable(message, error);
  }
}

function refuseLongShortString(field: string, value: string): void {
  // A UTF-16 code unit is at most 3 bytes of UTF-8: most names are not worth encoding to measure.
  if (value.length * 3 <= AMQP_SHORT_STRING_MAX_BYTES) return;
  const bytes = Buffer.byteLength(value);
  if (bytes > AMQP_SHORT_STRING_MAX_BYTES) throw new Error(`its ${field} is ${bytes} bytes, more than AMQP's ${AMQP_SHORT_STRING_MAX_BYTES}-byte short string`);
}
