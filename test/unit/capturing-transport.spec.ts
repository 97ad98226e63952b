import { TransportUnavailableError } from '../../lib/entries/transports';
import { CapturingOutboxTransport } from '../../lib/testing';
import type { OutgoingMessage } from '../../lib/message/outbox-transport';

const message = (messageId: string): OutgoingMessage => ({
  messageId,
  type: 'order.paid',
  transport: 'default',
  exchange: 'orders',
  routingKey: 'order.paid',
  destination: '',
  payload: '{"n":1}',
  headers: {},
  attempts: 0,
  createdAt: new Date(0),
});

describe('CapturingOutboxTransport', () => {
  it('refuses, as unavailable, a send that comes while it is down, and records it nowhere', async () => {
    const transport = new CapturingOutboxTransport();
    transport.setAvailable(false);
    // A lane checks isAvailable() before it claims; a claim already under way still sends.
    await expect(transport.send(message('late'))).rejects.toBeInstanceOf(TransportUnavailableError);
    expect(transport.messages).toEqual([]);
    expect(transport.failures).toEqual([]);

    transport.setAvailable(true);
    await transport.send(message('back'));
    expect(transport.messages.map((sent) => sent.messageId)).toEqual(['back']);
  });
});
