import type { ChannelModel } from 'amqplib';
import { TransportUnavailableError } from '../../errors';
import { BrokerCloseError } from './channel-close';
import { ConfirmPublisher } from './confirm-publisher';

/** The channel on one connection: `opened` once it is. */
interface OpenedOn {
  connection: ChannelModel;
  publisher: Promise<ConfirmPublisher>;
  opened?: ConfirmPublisher;
}

/**
 * The transport's main confirm channel, which every message shares unless it is sent alone: one
 * at a time, on the connection of the moment, opened on first use and again after it closed.
 */
export class MainChannel {
  private current?: OpenedOn;

  constructor(private readonly onBrokerClose: (error: BrokerCloseError) => void) {}

  /** The channel on `connection` when it is open and usable now; otherwise see `on`. */
  openOn(connection: ChannelModel): ConfirmPublisher | undefined {
    const opened = this.current?.connection === connection ? this.current.opened : undefined;
    return opened?.usable ? opened : undefined;
  }

  /** The channel on `connection`, opened on first use and again after it closed. */
  on(connection: ChannelModel): Promise<ConfirmPublisher> {
    const current = this.current;
    if (current && current.connection === connection) {
      return current.publisher.then((publisher) => (publisher.usable ? publisher : this.open(connection, current)));
    }
    return this.open(connection, current);
  }

  /** Closes the channel; the next `on` opens another. */
  async close(): Promise<void> {
    const current = this.current;
    this.current = undefined;
    await current?.publisher.then((p) => p.close()).catch(() => undefined);
  }

  private open(connection: ChannelModel, replacing: OpenedOn | undefined): Promise<ConfirmPublisher> {
    // Every send that finds the old channel closed opens the same new one.
    if (this.current !== replacing) return this.on(connection);
    let current: OpenedOn;
    const publisher = ConfirmPublisher.open(connection, this.onBrokerClose).then(
      (opened) => (current.opened = opened),
      (error: unknown) => {
        if (this.current === current) this.current = undefined;
        throw new TransportUnavailableError('Could not open the outbox channel', { cause: error });
      },
    );
    this.current = current = { connection, publisher };
    return publisher;
  }
}
