import { sendSpanAttributes, sendSpanName } from '../../lib/outbox/send-span';
import { OutboxTransport, OutgoingMessage } from '../../lib/entries/transports';

const message: OutgoingMessage = {
  messageId: '6f1c5a9e-2b7d-4c1e-9a3f-0d8e7b6a5c4d',
  type: 'order.paid',
  transport: 'default',
  exchange: 'orders',
  routingKey: 'order.paid',
  destination: '',
  payload: '{}',
  headers: {},
  attempts: 2,
  createdAt: new Date(0),
};

const send = () => Promise.resolve();

describe('The send span', () => {
  it('carries what the messaging conventions require, with the RabbitMQ routing key and the broker', () => {
    const rabbit: OutboxTransport = { send, messagingSystem: 'rabbitmq', serverAddress: () => ({ address: 'rabbit.internal', port: 5672 }) };
    expect(sendSpanName(message, 'default')).toBe('send orders');
    expect(sendSpanAttributes(rabbit, message, 'default')).toEqual({
      'messaging.system': 'rabbitmq',
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'send',
      'messaging.destination.name': 'orders',
      'messaging.rabbitmq.destination.routing_key': 'order.paid',
      'messaging.message.id': message.messageId,
      'server.address': 'rabbit.internal',
      'server.port': 5672,
      'outbox.transport': 'default',
      'outbox.attempt': 3,
    });
  });

  it('names a transport that does not name its system `outbox`, and leaves out what it does not know', () => {
    const custom: OutboxTransport = { send };
    const attributes = sendSpanAttributes(custom, { ...message, destination: 'partner', exchange: '', routingKey: '' }, 'partners');
    expect(attributes).toMatchObject({ 'messaging.system': 'outbox', 'messaging.destination.name': 'partner', 'outbox.transport': 'partners' });
    // Keys given as arrays: a dotted string would be read as a path into nested objects.
    expect(attributes).not.toHaveProperty(['server.address']);
    expect(attributes).not.toHaveProperty(['messaging.rabbitmq.destination.routing_key']);
  });
});
