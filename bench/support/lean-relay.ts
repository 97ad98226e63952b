import { randomUUID } from 'node:crypto';
import { ChannelModel, ConfirmChannel, connect, Options } from 'amqplib';
import type { TestDatabase } from '../../test/support/database';
import { AMQP_URL } from '../../test/support/environment';
import { LeanStore, LeanTableCosts, openLeanStore } from './lean-relay-store';

/** Pause of a loop that found nothing to claim. */
const IDLE_MS = 10;

/** Where and how a lean relay publishes, and how much it holds in flight. */
export interface LeanRelayCosts extends LeanTableCosts {
  /** Through a topic exchange bound with `#` instead of the default exchange straight to the queue. */
  topic?: boolean;
  /** With the AMQP `mandatory` flag. */
  mandatory?: boolean;
  /**
   * With what the library adds to each message: `type`, `contentType` and its two delivery headers
   * (`true`), or one part of it: the two properties alone, or the properties and one header.
   */
  headers?: boolean | 'properties' | 'attempt' | 'published-at';
  /** Rows a claim takes (250 unless given). */
  batch?: number;
  /** Messages in flight at once, unconfirmed or being settled (2,000 unless given): `window / batch` loops. */
  window?: number;
}

/** The broker names a lean relay publishes to. */
export interface LeanDestination {
  /** The topic exchange, bound to `queue` with `#`. */
  exchange: string;
  /** The durable queue; the default exchange routes to it by name. */
  queue: string;
}

/**
 * The leanest relay a careful engineer writes for this machine, as the price list's base line:
 * `window / batch` loops, each claiming `batch` rows (SKIP LOCKED), publishing them persistent on
 * a shared confirm channel, awaiting their confirms and marking them DONE with one UPDATE; the
 * library's costs added only where `costs` asks. It counts what it settled, so a drain is timed
 * without reading the table.
 */
export class LeanRelay {
  private stopped = false;
  private loops: Promise<void>[] = [];
  private settled = 0;
  private failure?: Error;

  private constructor(
    private readonly store: LeanStore,
    private readonly connection: ChannelModel,
    private readonly channel: ConfirmChannel,
    private readonly costs: LeanRelayCosts,
    private readonly destination: LeanDestination,
  ) {}

  /** Builds the relay's table afresh in `database` and starts relaying. */
  static async start(database: TestDatabase, costs: LeanRelayCosts, destination: LeanDestination): Promise<LeanRelay> {
    const batch = costs.batch ?? 250;
    const loops = Math.max(1, Math.round((costs.window ?? 2_000) / batch));
    const store = await openLeanStore(database, costs, loops);
    const connection = await connect(AMQP_URL);
    const channel = await connection.createConfirmChannel();
    const relay = new LeanRelay(store, connection, channel, costs, destination);
    channel.on('return', () => (relay.failure ??= new Error('a message was returned as unroutable')));
    relay.loops = Array.from({ length: loops }, () => relay.loop(batch));
    return relay;
  }

  /** Seeds `count` rows; resolves with the time of the seed's COMMIT. */
  seed(count: number): Promise<number> {
    this.settled = 0;
    return this.store.seed(count);
  }

  /** Rows settled since the last seed; throws what stopped a loop. */
  get done(): number {
    if (this.failure) throw this.failure;
    return this.settled;
  }

  /** Rows of the table not DONE (one scan: read it after the measured drain). */
  unfinished(): Promise<number> {
    return this.store.unfinished();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    try {
      await Promise.all(this.loops);
    } finally {
      await this.connection.close().catch(() => undefined);
      await this.store.close();
    }
  }

  private async loop(batch: number): Promise<void> {
    const token = randomUUID();
    try {
      while (!this.stopped) {
        const rows = await this.store.claim(batch, token);
        if (rows.length === 0) {
          await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
          continue;
        }
        await Promise.all(rows.map((row) => this.publish(row)));
        await this.store.settle(
          rows.map((row) => String(row.id)),
          token,
        );
        this.settled += rows.length;
      }
    } catch (error) {
      this.failure ??= error as Error;
    }
  }

  private publish(row: { message_id: string; payload: string; created_at?: string }): Promise<void> {
    const options: Options.Publish = { messageId: row.message_id, persistent: true, mandatory: this.costs.mandatory ?? false };
    const headers = this.costs.headers;
    if (headers) {
      options.type = 'bench.price';
      options.contentType = 'application/json';
      const publishedAt = () => (row.created_at ? new Date(row.created_at) : new Date()).toISOString();
      if (headers === true) options.headers = { 'outbox-attempt': 1, 'outbox-published-at': publishedAt() };
      else if (headers === 'attempt') options.headers = { 'outbox-attempt': 1 };
      else if (headers === 'published-at') options.headers = { 'outbox-published-at': publishedAt() };
    }
    const [exchange, routingKey] = this.costs.topic ? [this.destination.exchange, 'bench.price'] : ['', this.destination.queue];
    return new Promise<void>((resolve, reject) =>
      this.channel.publish(exchange, routingKey, Buffer.from(row.payload), options, (error) => (error ? reject(error) : resolve())),
    );
  }
}
