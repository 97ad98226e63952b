import { ClaimedMessage } from '../../lib/dialects/outbox-dialect';
import { failedSend, SEND_THEN, SendResult, SendsThen, SENT_RESULT } from '../../lib/message/send-then';
import { OutboxTransport, OutgoingMessage } from '../../lib/message/outbox-transport';
import { sendBatch } from '../../lib/outbox/lane-send';

const message = (n: number): ClaimedMessage => ({
  id: String(n),
  claimToken: 'token',
  messageId: `message-${n}`,
  type: 'order.paid',
  transport: 'default',
  exchange: 'orders',
  routingKey: 'paid',
  destination: '',
  payload: '{}',
  headers: {},
  attempts: 0,
  maxAttempts: 10,
  createdAt: new Date(0),
  bizKey: null,
  orderingKey: null,
});

/** A transport with the callback send, answering each message when the test says. */
class CallbackTransport implements OutboxTransport, SendsThen {
  readonly waiting = new Map<string, (result: SendResult) => void>();
  throwFor?: string;
  answerThenThrowFor?: string;

  send(): Promise<void> {
    throw new Error('the batch must go through the callback send');
  }

  [SEND_THEN](sent: OutgoingMessage, settled: (result: SendResult) => void): void {
    if (sent.messageId === this.answerThenThrowFor) {
      settled(SENT_RESULT);
      throw new Error('thrown after answering');
    }
    if (sent.messageId === this.throwFor) throw new Error('thrown before answering');
    this.waiting.set(sent.messageId, settled);
  }

  answer(messageId: string, result: SendResult): void {
    this.waiting.get(messageId)!(result);
  }
}

describe('sendBatch through a transport that sends with a callback', () => {
  it("resolves once every send is answered, with each outcome at its message's index", async () => {
    const transport = new CallbackTransport();
    const batch = [message(1), message(2), message(3)];
    let resolved = false;
    const sent = sendBatch(transport, 'default', batch).then((results) => ((resolved = true), results));
    transport.answer('message-3', SENT_RESULT);
    transport.answer('message-1', failedSend(new Error('nacked')));
    await Promise.resolve();
    expect(resolved).toBe(false);
    transport.answer('message-2', SENT_RESULT);
    const results = await sent;
    expect(results.map((result) => result.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect((results[0] as PromiseRejectedResult).reason).toEqual(new Error('nacked'));
  });

  it('fails only the message whose send threw, and counts a message answered before a throw once', async () => {
    const transport = new CallbackTransport();
    transport.throwFor = 'message-1';
    transport.answerThenThrowFor = 'message-2';
    const sent = sendBatch(transport, 'default', [message(1), message(2), message(3)]);
    transport.answer('message-3', SENT_RESULT);
    const results = await sent;
    expect(results.map((result) => result.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect((results[0] as PromiseRejectedResult).reason).toEqual(new Error('thrown before answering'));
  });

  it('writes each send’s duration at its index when asked', async () => {
    const transport = new CallbackTransport();
    const sendMs = new Array<number>(2);
    const sent = sendBatch(transport, 'default', [message(1), message(2)], sendMs);
    transport.answer('message-2', SENT_RESULT);
    transport.answer('message-1', SENT_RESULT);
    await sent;
    expect(sendMs.every((ms) => typeof ms === 'number' && ms >= 0)).toBe(true);
  });

  it('resolves an empty batch at once', async () => {
    await expect(sendBatch(new CallbackTransport(), 'default', [])).resolves.toEqual([]);
  });
});

describe('sendBatch through a transport whose send() is overridden', () => {
  /** A subclass that fails every send of its own accord, as a wrapping transport would. */
  class RefusingTransport extends CallbackTransport {
    override send(): Promise<void> {
      return Promise.reject(new Error('refused by the subclass'));
    }
  }

  it('goes through the overriding send(), not the callback send it would bypass', async () => {
    const results = await sendBatch(new RefusingTransport(), 'default', [message(1), message(2)]);
    expect(results.map((result) => (result.status === 'rejected' ? (result.reason as Error).message : 'sent'))).toEqual([
      'refused by the subclass',
      'refused by the subclass',
    ]);
  });

  it('goes through a send() replaced on the instance (a spy)', async () => {
    const transport = new CallbackTransport();
    transport.send = () => Promise.resolve();
    const results = await sendBatch(transport, 'default', [message(1)]);
    expect(results).toEqual([SENT_RESULT]);
    expect(transport.waiting.size).toBe(0);
  });
});
