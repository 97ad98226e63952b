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
