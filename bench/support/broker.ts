import { randomUUID } from 'node:crypto';
import { Channel, ChannelModel, ConfirmChannel, connect } from 'amqplib';
import { AMQP_URL } from '../../test/support/environment';

/** A 1 KB JSON body, as every bench publishes it. */
export const BENCH_BODY = { blob: 'x'.repeat(1_000) };
export const BENCH_BODY_TEXT = JSON.stringify(BENCH_BODY);

/**
 * A durable topic exchange and a durable queue bound to it with `#`, owned by one bench, so
 * published messages (persistent, `mandatory`) are routable. `close()` deletes both.
 */
export class BenchQueue {
  private constructor(
    readonly connection: ChannelModel,
    readonly channel: Channel,
    readonly exchange: string,
    readonly queue: string,
  ) {}

  static async declare(exchange: string, queue: string): Promise<BenchQueue> {
    const connection = await connect(AMQP_URL);
    const channel = await connection.createChannel();
    await channel.assertExchange(exchange, 'topic', { durable: true, autoDelete: false });
    await channel.deleteQueue(queue);
    await channel.assertQueue(queue, { durable: true, exclusive: false, autoDelete: false });
    await channel.bindQueue(queue, exchange, '#');
    return new BenchQueue(connection, channel, exchange, queue);
  }

  async purge(): Promise<void> {
    await this.channel.purgeQueue(this.queue);
  }

  async messageCount(): Promise<number> {
    return (await this.channel.checkQueue(this.queue)).messageCount;
  }

  async close(): Promise<void> {
    await this.channel.deleteQueue(this.queue).catch(() => undefined);
    await this.channel.deleteExchange(this.exchange).catch(() => undefined);
    await this.connection.close().catch(() => undefined);
  }
}

/**
 * Publishes `count` persistent 1 KB messages through a confirm channel, keeping at most `window`
 * unconfirmed, and resolves once the last is confirmed. Returns messages/s (first publish to
 * last confirm). The raw baseline of the dispatch bench.
 */
export async function publishConfirmWindow(exchange: string, count: number, window: number): Promise<number> {
  const connection = await connect(AMQP_URL);
  try {
    const channel: ConfirmChannel = await connection.createConfirmChannel();
    let returned = 0;
    channel.on('return', () => returned++);
    const body = Buffer.from(BENCH_BODY_TEXT);
    const started = performance.now();
    let published = 0;
    let confirmed = 0;
    let failed: Error | undefined;
    await new Promise<void>((resolve, reject) => {
      const pump = () => {
        if (failed) return reject(failed);
        while (published < count && published - confirmed < window) {
          published++;
          channel.publish(
            exchange,
            'bench.raw',
            body,
            { messageId: randomUUID(), type: 'bench.raw', contentType: 'application/json', persistent: true, mandatory: true, headers: {} },
            (error) => {
              if (error) failed ??= error instanceof Error ? error : new Error(String(error));
              confirmed++;
              if (confirmed !== count) pump();
              else if (failed) reject(failed);
              else resolve();
            },
          );
        }
      };
      pump();
    });
    const elapsed = (performance.now() - started) / 1000;
    if (returned > 0) throw new Error(`${returned} raw message(s) were returned as unroutable`);
    return count / elapsed;
  } finally {
    await connection.close().catch(() => undefined);
  }
}
