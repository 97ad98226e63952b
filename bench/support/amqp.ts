import { ChannelModel, connect, ConfirmChannel, Options } from 'amqplib';
import { AMQP_URL } from '../../test/support/environment';

/** Most unconfirmed publishes in flight while filling a backlog. */
const CONFIRM_WINDOW = 1_000;

/** A connection with one confirm channel, for benches that feed or drain the broker by hand. */
export class BenchBroker {
  private constructor(
    readonly connection: ChannelModel,
    readonly channel: ConfirmChannel,
  ) {}

  static async open(): Promise<BenchBroker> {
    const connection = await connect(AMQP_URL);
    const channel = await connection.createConfirmChannel();
    return new BenchBroker(connection, channel);
  }

  /** Declares `queue` afresh (empty) and binds it to `exchange` with `routingKey`. */
  async freshQueue(exchange: string, queue: string, routingKey: string, options: Options.AssertQueue = { durable: true }): Promise<void> {
    await this.channel.assertExchange(exchange, 'topic', { durable: false });
    await this.channel.deleteQueue(queue);
    await this.channel.assertQueue(queue, options);
    await this.channel.bindQueue(queue, exchange, routingKey);
  }

  /**
   * Publishes `count` persistent JSON messages, each with its `messageId`, keeping at most
   * CONFIRM_WINDOW unconfirmed, and resolves once the broker confirmed all of them.
   */
  async publishBacklog(
    exchange: string,
    routingKey: string,
    count: number,
    message: (n: number) => { messageId: string; body: unknown; type?: string },
  ): Promise<void> {
    for (let first = 0; first < count; first += CONFIRM_WINDOW) {
      const end = Math.min(first + CONFIRM_WINDOW, count);
      for (let n = first; n < end; n++) {
        const { messageId, body, type } = message(n);
        this.channel.publish(exchange, routingKey, Buffer.from(JSON.stringify(body)), {
          messageId,
          type,
          persistent: true,
          contentType: 'application/json',
        });
      }
      await this.channel.waitForConfirms();
    }
  }

  async messageCount(queue: string): Promise<number> {
    return (await this.channel.checkQueue(queue)).messageCount;
  }

  async close(queuesToDelete: string[] = []): Promise<void> {
    for (const queue of queuesToDelete) await this.channel.deleteQueue(queue).catch(() => undefined);
    await this.channel.close().catch(() => undefined);
    await this.connection.close().catch(() => undefined);
  }
}

/** Polls `probe` every `everyMs` until it returns at least `target`, or `timeoutMs` passed; returns the last value. */
export async function waitForCount(probe: () => Promise<number>, target: number, timeoutMs: number, everyMs = 25): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value >= target || performance.now() >= deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
