import type { ChannelModel } from 'amqplib';
import fc from 'fast-check';
import { EventEmitter } from 'node:events';
import { AmqpPublication, ConfirmPublisher, PublishOutcome } from '../../lib/transport/amqp/confirm-publisher';

/** A confirm channel that keeps each publication's confirm callback, for the test to call in the broker's order. */
class ScriptedChannel extends EventEmitter {
  readonly confirms: ((error: Error | null) => void)[] = [];

  publish(_exchange: string, _routingKey: string, _content: Buffer, _options: object, confirm: (error: Error | null) => void): boolean {
    this.confirms.push(confirm);
    return true;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

interface Frame {
  kind: 'confirm' | 'return';
  copy: number;
}

const publication: AmqpPublication = {
  messageId: 'm-1',
  exchange: 'orders',
  routingKey: 'order.paid',
  content: Buffer.from('{}'),
  options: { messageId: 'm-1', mandatory: true },
};

/**
 * Copies of one message on one channel (the first ones timed out and were sent again), each
 * routed or returned; the broker confirms them in any order (a `multiple` ack confirms several
 * in a row), and returns each returned copy before its confirm, anywhere before it.
 */
const copies = fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }).chain((routed) =>
  fc.record({
    routed: fc.constant(routed),
    confirmOrder: fc.shuffledSubarray(
      routed.map((_, i) => i),
      { minLength: routed.length, maxLength: routed.length },
    ),
    returnSlots: fc.array(fc.nat(), { minLength: routed.length, maxLength: routed.length }),
  }),
);

describe('ConfirmPublisher', () => {
  it('counts as many copies of a message confirmed as the broker routed, whatever the order of returns and confirms', async () => {
    await fc.assert(
      fc.asyncProperty(copies, async ({ routed, confirmOrder, returnSlots }) => {
        const channel = new ScriptedChannel();
        const connection = { createConfirmChannel: () => Promise.resolve(channel) } as unknown as ChannelModel;
        const publisher = await ConfirmPublisher.open(connection, () => undefined);
        const outcomes = routed.map(() => undefined as PublishOutcome | undefined);
        routed.forEach((_, i) => publisher.publishThen(publication, (outcome) => (outcomes[i] = outcome)));

        // The broker's frames: each copy's confirm, and each return anywhere before its own copy's confirm.
        const frames: Frame[] = confirmOrder.map((copy) => ({ kind: 'confirm', copy }));
        routed.forEach((isRouted, copy) => {
          if (isRouted) return;
          const confirmAt = frames.findIndex((f) => f.kind === 'confirm' && f.copy === copy);
          frames.splice(returnSlots[copy] % (confirmAt + 1), 0, { kind: 'return', copy });
        });
        for (const frame of frames) {
          if (frame.kind === 'confirm') channel.confirms[frame.copy](null);
          else channel.emit('return', { properties: { messageId: publication.messageId } });
        }

        const confirmed = outcomes.filter((o) => o?.kind === 'confirmed').length;
        const returned = outcomes.filter((o) => o?.kind === 'returned').length;
        expect(confirmed + returned).toBe(routed.length);
        expect(confirmed).toBe(routed.filter(Boolean).length);
      }),
      { numRuns: 1_000 },
    );
  });
});
