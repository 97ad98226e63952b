import type { OutboxTransport, OutgoingMessage } from '../message/outbox-transport';

/** `messaging.system` of a transport that does not name its own. */
const UNNAMED_SYSTEM = 'outbox';

/** Where a message goes, for the span's name and `messaging.destination.name`: what its transport addresses it by. */
function destinationOf(message: OutgoingMessage): string {
  return message.destination || message.exchange || message.routingKey;
}

/** The send span's name, `send <destination>` as the messaging conventions name a producer span. */
export function sendSpanName(message: OutgoingMessage, lane: string): string {
  return `send ${destinationOf(message) || lane}`;
}

/**
 * The attributes the OpenTelemetry messaging conventions ask of a send span (system, operation,
 * destination, message id, server where known), with the library's own (`outbox.*`).
 */
export function sendSpanAttributes(transport: OutboxTransport, message: OutgoingMessage, lane: string): Record<string, string | number> {
  const system = transport.messagingSystem ?? UNNAMED_SYSTEM;
  const attributes: Record<string, string | number> = {
    'messaging.system': system,
    'messaging.operation.type': 'send',
    'messaging.operation.name': 'send',
    'messaging.destination.name': destinationOf(message),
    'messaging.message.id': message.messageId,
    'outbox.transport': lane,
    'outbox.attempt': message.attempts + 1,
  };
  if (system === 'rabbitmq' && message.routingKey !== '') attributes['messaging.rabbitmq.destination.routing_key'] = message.routingKey;
  const server = transport.serverAddress?.(message);
  if (server) {
    attributes['server.address'] = server.address;
    if (server.port !== undefined) attributes['server.port'] = server.port;
  }
  return attributes;
}
