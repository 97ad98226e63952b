/**
 * `nestjs-outbox/transports`: the ways out, the contract a transport of your own implements, and
 * the tokens of an outbox's transports.
 *
 * @module nestjs-outbox/transports
 */

// The transports: RabbitMQ (the default), HTTP, and any @nestjs/microservices ClientProxy.
export { RabbitMqOutboxTransport } from '../transport/rabbitmq.transport';
export { HttpOutboxTransport } from '../transport/http/http-outbox.transport';
export type { HttpEndpoint, HttpOutboxTransportOptions } from '../transport/http/http-endpoint';
export { ClientProxyOutboxTransport } from '../transport/client-proxy/client-proxy-outbox.transport';
export type { ClientProxyOutboxTransportOptions } from '../transport/client-proxy/client-proxy-options';
export type { OutboxEnvelope } from '../transport/client-proxy/outbox-envelope';
export type { EventClient } from '../transport/client-proxy/event-client';

// The contract of a transport, and the headers each delivery carries.
export type { AddressProblem, MessageAddress, OutboxTransport, OutgoingMessage, ServerAddress } from '../message/outbox-transport';
export { ATTEMPT_HEADER, deliveryHeaders, PUBLISHED_AT_HEADER } from '../transport/delivery-headers';

// Errors a transport throws, which the dispatcher reads to retry, hold or give up.
export { BrokerChannelError, ExchangeNotFoundError, SendTimeoutError, TransportUnavailableError, UnroutableMessageError } from '../errors';

// An outbox's transports by name (lanes), and the tokens of its default transport and of all.
export type { OutboxTransports, TransportLane } from '../transport/outbox-transports';
export { OUTBOX_TRANSPORT, OUTBOX_TRANSPORTS } from '../naming/injection-tokens';
export { getOutboxTransportsToken, getOutboxTransportToken } from '../module/outbox-tokens';
