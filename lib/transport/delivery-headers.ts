import type { OutgoingMessage } from '../message/outbox-transport';

/** Header carrying the delivery's attempt number: 1 for the first send, 2 for the first retry. */
export const ATTEMPT_HEADER = 'outbox-attempt';
/** Header carrying when the message was published (ISO 8601, UTC, the database's clock). */
export const PUBLISHED_AT_HEADER = 'outbox-published-at';

/**
 * The headers every transport that has headers adds to a delivery, so that a consumer can tell a
 * retry from a first attempt and measure end-to-end age without the publisher's help.
 */
export function deliveryHeaders(message: Pick<OutgoingMessage, 'attempts' | 'createdAt'>): {
  /** The attempt number: 1 for the first send. */
  [ATTEMPT_HEADER]: number;
  /** When the message was published, ISO 8601 UTC. */
  [PUBLISHED_AT_HEADER]: string;
} {
  return { [ATTEMPT_HEADER]: message.attempts + 1, [PUBLISHED_AT_HEADER]: message.createdAt.toISOString() };
}

/**
 * The headers a delivery of `message` carries: its own, with the delivery headers over them when
 * `withDeliveryHeaders` (the `deliveryHeaders` option). Undefined when that leaves none.
 */
export function headersToSend(
  message: Pick<OutgoingMessage, 'attempts' | 'createdAt' | 'headers'>,
  withDeliveryHeaders: boolean,
): Record<string, unknown> | undefined {
  const own = hasHeaders(message.headers) ? message.headers : undefined;
  if (!withDeliveryHeaders) return own;
  const delivery = deliveryHeaders(message);
  // Most messages have no headers of their own: one object per send instead of two.
  return own ? { ...own, ...delivery } : delivery;
}

/** Whether `headers` has a field amqplib would encode: for…in, as amqplib iterates. */
export function hasHeaders(headers: object | null | undefined): headers is Record<string, unknown> {
  for (const _name in headers) return true;
  return false;
}
