import { Channel, ChannelModel, connect } from 'amqplib';
import { AMQP_URL } from './environment';
import { InboxFixtureConfig, prepareInboxBroker } from './inbox-fixture';

/**
 * A test file's own connection to the broker: the channel it delivers and inspects through, and
 * the consumer queues it starts without. Those are deleted again on `close()`: golevelup declares
 * them with dead-letter arguments, and a leftover would refuse another file's declaration.
 */
export class BrokerConnection {
  private readonly queues = new Set<string>();

  private constructor(
    private readonly connection: ChannelModel,
    readonly channel: Channel,
  ) {}

  /** Connects to the test broker (`AMQP_URL`) and opens a channel. */
  static async open(): Promise<BrokerConnection> {
    const connection = await connect(AMQP_URL);
    return new BrokerConnection(connection, await connection.createChannel());
  }

  /**
   * Fresh broker objects for each of the inbox fixtures `configs` (see `prepareInboxBroker`).
   * With `outExchange`, also declares the exchange their handlers publish to, for a file that
   * binds no probe to it (a probe declares it).
   */
  async prepareInboxes(configs: InboxFixtureConfig[], options: { outExchange?: boolean } = {}): Promise<void> {
    for (const config of configs) {
      await prepareInboxBroker(this.channel, config);
      for (const { queue } of config.consumers) this.queues.add(queue);
    }
    if (options.outExchange) for (const exchange of new Set(configs.map((config) => config.outExchange))) await this.assertExchange(exchange);
  }

  /** Declares the topic exchange `exchange`, not durable, as the test files' exchanges are. */
  async assertExchange(exchange: string): Promise<void> {
    await this.channel.assertExchange(exchange, 'topic', { durable: false });
  }

  /** Deletes `queues`, which an application is about to declare, now and again on `close()`. */
  async freshQueues(queues: string[]): Promise<void> {
    for (const queue of queues) {
      await this.channel.deleteQueue(queue);
      this.queues.add(queue);
    }
  }

  /** Deletes the consumer queues it was given, then closes the connection. */
  async close(): Promise<void> {
    for (const queue of this.queues) await this.channel.deleteQueue(queue);
    await this.connection.close();
  }
}
