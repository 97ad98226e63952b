import { Channel, ChannelModel, connect, ConsumeMessage } from 'amqplib';
import { AMQP_URL } from './environment';

/**
 * A plain amqplib consumer bound to an exchange, recording every delivery, so tests observe
 * what really reached the broker.
 */
export class QueueProbe {
  readonly messages: ConsumeMessage[] = [];
  private constructor(
    private readonly connection: ChannelModel,
    private readonly channel: Channel,
    readonly queue: string,
  ) {}

  static async bind(exchange: string, routingKey: string, queue: string): Promise<QueueProbe> {
    const connection = await connect(AMQP_URL);
    const channel = await connection.createChannel();
    await channel.assertExchange(exchange, 'topic', { durable: false, autoDelete: false });
    await channel.deleteQueue(queue);
    await channel.assertQueue(queue, { durable: false, exclusive: false });
    await channel.bindQueue(queue, exchange, routingKey);
    const probe = new QueueProbe(connection, channel, queue);
    await channel.consume(queue, (message) => message && probe.messages.push(message), { noAck: true });
    return probe;
  }

  get messageIds(): string[] {
    return this.messages.map((m) => m.properties.messageId as string);
  }

  bodies<T = unknown>(): T[] {
    return this.messages.map((m) => JSON.parse(m.content.toString()) as T);
  }

  /** Waits until at least `count` messages arrived, or fails after `timeoutMs`. */
  async waitFor(count: number, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.messages.length < count) {
      if (Date.now() > deadline) throw new Error(`expected ${count} message(s) on ${this.queue}, got ${this.messages.length}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async close(): Promise<void> {
    await this.channel.deleteQueue(this.queue).catch(() => undefined);
    await this.connection.close().catch(() => undefined);
  }
}

/** Declares an exchange that a test file owns. */
export async function assertExchange(exchange: string): Promise<void> {
  const connection = await connect(AMQP_URL);
  try {
    const channel = await connection.createChannel();
    await channel.assertExchange(exchange, 'topic', { durable: false });
  } finally {
    await connection.close();
  }
}
