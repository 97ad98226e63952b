import type { ConsumeMessage } from 'amqplib';
import { ClaimedInboxMessage } from '../dialects/inbox-dialect';
import { NonRetryableError } from '../errors';
import { DeferredReplay, registerReplay } from './deferred-replay';
import { InboxHandlerDefinition } from './inbox-handler-options';
import { MalformedBody, safeDeserializer } from './malformed-body';

/**
 * Runs a deferred `@InboxHandler()` on its stored row: through the handler's Nest chain and
 * deserializer, as golevelup runs a delivery from the broker. The inbox interceptor hands the
 * rest of the chain to `replay` (registered on the rebuilt message).
 */
export async function runStoredDelivery(definition: InboxHandlerDefinition, row: ClaimedInboxMessage, replay: DeferredReplay): Promise<void> {
  const message = asConsumeMessage(row);
  const payload = (definition.deserialize ?? safeDeserializer())(message.content, message);
  registerReplay(message, replay);
  if (payload instanceof MalformedBody) throw new NonRetryableError(`the stored body does not deserialize any more: ${payload.reason}`);
  await definition.invoke(payload, message, row.headers);
}

/** The delivery as the handler would have seen it from the broker, rebuilt from the stored row. */
function asConsumeMessage(row: ClaimedInboxMessage): ConsumeMessage {
  return {
    content: Buffer.from(row.payload),
    fields: { deliveryTag: 0, redelivered: row.attempts > 0, exchange: row.exchange, routingKey: row.routingKey, consumerTag: '' },
    properties: { messageId: row.messageId, type: row.type || undefined, headers: row.headers } as ConsumeMessage['properties'],
  };
}
