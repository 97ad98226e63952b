import type { ChannelModel } from 'amqplib';
import { BrokerCloseError } from './channel-close';
import { AmqpPublication, ConfirmPublisher, PublishOutcome } from './confirm-publisher';

/**
 * Publishes one message at a time, each alone on the lane's channel: for messages that shared a
 * channel the broker closed without saying which of them caused it. Alone, a message whose
 * channel is closed again is the cause; the others are confirmed as usual. Rare and short: the
 * broker names the culprit's exchange for most errors a publication can cause.
 */
export class IsolationLane {
  private tail: Promise<unknown> = Promise.resolve();
  private publisher?: ConfirmPublisher;

  constructor(private readonly onBrokerClose: (error: BrokerCloseError) => void) {}

  publish(connection: ChannelModel, publication: AmqpPublication): Promise<PublishOutcome> {
    const outcome = this.tail.then(() => this.publishAlone(connection, publication));
    this.tail = outcome.catch(() => undefined);
    return outcome;
  }

  async close(): Promise<void> {
    await this.publisher?.close();
  }

  private async publishAlone(connection: ChannelModel, publication: AmqpPublication): Promise<PublishOutcome> {
    if (!this.publisher?.usable || this.publisher.connection !== connection) {
      try {
        this.publisher = await ConfirmPublisher.open(connection, this.onBrokerClose);
      } catch {
        // The connection went: not this publication's doing.
        return { kind: 'closed', blame: 'none' };
      }
    }
    const outcome = await this.publisher.publish(publication);
    // Alone on its channel, a publication the broker closed the channel over is the cause, named or not.
    return outcome.kind === 'closed' && outcome.blame === 'suspect' ? { ...outcome, blame: 'culprit' } : outcome;
  }
}
