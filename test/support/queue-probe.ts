import { Channel, ChannelModel, connect, ConsumeMessage } from 'amqplib';
import { randomUUID } from 'node:crypto';
import type { TestDatabase } from './database';
import { AMQP_URL } from './environment';
import { WAIT_TIMEOUT_MS, waitUntil } from './wait';

/** Marks the probe's own marker messages (see `flush`), which are not recorded. */
const MARKER_HEADER = 'x-test-probe-marker';

/**
 * A plain amqplib consumer bound to an exchange, recording every delivery, so tests observe
 * what really reached the broker.
 */
export class QueueProbe {
  readonly messages: ConsumeMessage[] = [];
  private readonly markersBack = new Set<string>();
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
    await channel.consume(queue, (message) => message && probe.record(message), { noAck: true });
    return probe;
  }

  get messageIds(): string[] {
    return this.messages.map((m) => m.properties.messageId as string);
  }

  bodies<T = unknown>(): T[] {
    return this.messages.map((m) => JSON.parse(m.content.toString()) as T);
  }

  /** Waits until at least `count` messages arrived, or fails after `timeoutMs`. */
  async waitFor(count: number, timeoutMs = WAIT_TIMEOUT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.messages.length < count) {
      if (Date.now() > deadline) throw new Error(`expected ${count} message(s) on ${this.queue}, got ${this.messages.length}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /**
   * Returns once every message that was in the probe's queue when it was called has been
   * recorded: it puts a marker at the tail of the queue and waits for it to come back (a queue
   * delivers in order to its one consumer). The marker itself is not recorded. For "nothing
   * more arrived": call it once whatever could still send has been sent and confirmed (its rows
   * are settled, or its process has exited).
   */
  async flush(timeoutMs = WAIT_TIMEOUT_MS): Promise<void> {
    const marker = randomUUID();
    this.channel.sendToQueue(this.queue, Buffer.alloc(0), { messageId: marker, headers: { [MARKER_HEADER]: true } });
    await waitUntil(() => this.markersBack.has(marker), `a marker sent to ${this.queue} came back through it`, timeoutMs);
  }

  private record(message: ConsumeMessage): void {
    if (message.properties.headers?.[MARKER_HEADER]) this.markersBack.add(message.properties.messageId as string);
    else this.messages.push(message);
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

/**
 * Returns once nothing more from `database`'s outbox can reach `probe`: no row waits to be sent,
 * so every send was confirmed and is in the probe's queue ahead of flush()'s marker.
 */
export async function nothingMoreArrives(database: TestDatabase, probe: QueueProbe): Promise<void> {
  await waitUntil(async () => {
    const { PENDING, PROCESSING, FAILED } = await database.statusCounts();
    return !PENDING && !PROCESSING && !FAILED;
  }, 'no message is left to send');
  await probe.flush();
}
