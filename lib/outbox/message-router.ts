import { OutboxMessageInvalidError } from '../errors';
import { OutboxMessage } from '../message/outbox-message';
import { isTransportName, TRANSPORT_NAME_RULE } from '../options/transport-lanes';

/**
 * The transport a message is stored for: its own `transport`, else what `route(message)` returns,
 * else the default. The name is checked, not looked up: a transport this process does not
 * configure may be another's (a rolling deploy), and its messages wait for it.
 * @throws OutboxMessageInvalidError when the name given or returned cannot name a transport
 */
export function transportOf(
  message: OutboxMessage,
  route: ((message: Readonly<OutboxMessage>) => string | undefined) | undefined,
  defaultName: string,
): string {
  if (message.transport !== undefined) {
    if (!isTransportName(message.transport)) {
      throw new OutboxMessageInvalidError(`transport must be a transport name (${TRANSPORT_NAME_RULE}), got ${JSON.stringify(message.transport)}`, 'transport');
    }
    return message.transport;
  }
  const routed = route?.(message);
  if (routed === undefined || routed === null) return defaultName;
  if (!isTransportName(routed)) {
    throw new OutboxMessageInvalidError(
      `route() returned ${JSON.stringify(routed)}, which is not a transport name (${TRANSPORT_NAME_RULE}); return undefined for the default transport`,
      'transport',
    );
  }
  return routed;
}
