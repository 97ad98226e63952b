import type { ChannelModel, ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import { BrokerCloseError, exchangesBlamed } from './channel-close';

/** One message as it is handed to amqplib. */
export interface AmqpPublication {
  messageId: string;
  exchange: string;
  routingKey: string;
  content: Buffer;
  options: Options.Publish;
}

/**
 * How a publication ended on its channel. `closed`: the channel closed before the confirm, and
 * `blame` says whose fault that was: `culprit` (the broker named this publication's exchange),
 * `innocent` (it named another's, or the publication never left: send it again), `suspect` (the
 * broker named none), `none` (no broker error: the connection went, or the channel was shut).
 */
export type PublishOutcome =
  | { kind: 'confirmed' }
  | { kind: 'returned' }
  | { kind: 'nacked' }
  | { kind: 'unencodable'; error: unknown }
  | { kind: 'closed'; blame: 'culprit' | 'innocent' | 'suspect' | 'none'; error?: BrokerCloseError };

interface Pending {
  exchange: string;
  settle(outcome: PublishOutcome): void;
}

/**
 * One confirm channel of the outbox's own, with every event amqplib can emit handled: a channel
 * error (a 404 for an exchange that vanished, a 406 for a header the broker refuses) closes this
 * channel only, never the shared connection, and each unconfirmed publication learns whether it
 * was the cause. amqp-connection-manager's channel wrapper cannot do this: it has no listener for
 * channel errors (the process exits), and after a channel error it waits for a reconnection that
 * never comes.
 */
export class ConfirmPublisher {
  private readonly pending = new Set<Pending>();
  /** Message ids the broker returned as unroutable; basic.return arrives before the confirm. */
  private readonly returned = new Set<string>();
  private closeError?: BrokerCloseError;
  private blamed?: Set<string>;
  private closed = false;
  /** No new publication goes to a retired channel; it closes once its last confirm arrived. */
  private retired = false;
  private drained?: Promise<void>;

  private constructor(
    readonly connection: ChannelModel,
    private readonly channel: ConfirmChannel,
    onBrokerClose: (error: BrokerCloseError) => void,
  ) {
    channel.on('error', (error: BrokerCloseError) => {
      this.closeError = { code: error.code, message: error.message };
      this.blamed = exchangesBlamed(
        this.closeError,
        [...this.pending].map((p) => p.exchange),
      );
      onBrokerClose(this.closeError);
    });
    channel.on('return', (message: ConsumeMessage) => {
      const messageId = message.properties.messageId as string | undefined;
      if (messageId) this.returned.add(messageId);
    });
    // amqplib has already failed every unconfirmed publication with 'channel closed' by now.
    channel.on('close', () => (this.closed = true));
  }

  /** Opens a confirm channel on `connection`; `onBrokerClose` hears of channel errors (for logs). */
  static async open(connection: ChannelModel, onBrokerClose: (error: BrokerCloseError) => void): Promise<ConfirmPublisher> {
    return new ConfirmPublisher(connection, await connection.createConfirmChannel(), onBrokerClose);
  }

  /** Whether new publications may go to this channel. */
  get usable(): boolean {
    return !this.closed && !this.retired;
  }

  /** Publishes and waits for the broker's confirm (or the channel's end). Never rejects. */
  publish(publication: AmqpPublication): Promise<PublishOutcome> {
    // Not an async function: this runs per message, and most find the write buffer open.
    if (this.drained) return this.drained.then(() => this.publishNow(publication));
    return this.publishNow(publication);
  }

  private publishNow(publication: AmqpPublication): Promise<PublishOutcome> {
    if (!this.usable) return Promise.resolve({ kind: 'closed', blame: 'innocent' });
    return new Promise<PublishOutcome>((resolve) => {
      const entry: Pending = {
        exchange: publication.exchange,
        settle: (outcome) => {
          if (!this.pending.delete(entry)) return;
          resolve(outcome);
          if (this.retired && this.pending.size === 0) void this.close();
        },
      };
      this.pending.add(entry);
      let writable: boolean;
      try {
        writable = this.channel.publish(publication.exchange, publication.routingKey, publication.content, publication.options, (error) =>
          entry.settle(this.outcome(publication, error)),
        );
      } catch (error) {
        // Nothing was written, but amqplib had already queued this publication's confirm callback,
        // so later confirms on this channel would be matched to the wrong publications.
        this.retired = true;
        entry.settle(this.closed || (error as Error).name === 'IllegalOperationError' ? { kind: 'closed', blame: 'innocent' } : { kind: 'unencodable', error });
        return;
      }
      if (!writable) this.waitForDrain();
    });
  }

  async close(): Promise<void> {
    this.retired = true;
    if (this.closed) return;
    this.closed = true;
    await this.channel.close().catch(() => undefined);
  }

  private outcome(publication: AmqpPublication, error: Error | null): PublishOutcome {
    const returned = this.returned.delete(publication.messageId);
    if (!error) return returned ? { kind: 'returned' } : { kind: 'confirmed' };
    if (error.message === 'message nacked') return { kind: 'nacked' };
    const closeError = this.closeError;
    if (!closeError) return { kind: 'closed', blame: 'none' };
    if (!this.blamed) return { kind: 'closed', blame: 'suspect', error: closeError };
    return { kind: 'closed', blame: this.blamed.has(publication.exchange) ? 'culprit' : 'innocent', error: closeError };
  }

  /** amqplib's write buffer is full: later publications wait until it drained (or the channel closed). */
  private waitForDrain(): void {
    this.drained ??= new Promise<void>((resolve) => {
      const done = () => {
        this.channel.removeListener('drain', done);
        this.channel.removeListener('close', done);
        this.drained = undefined;
        resolve();
      };
      this.channel.on('drain', done);
      this.channel.on('close', done);
    });
  }
}
