import { ConfirmChannel, ChannelModel, connect } from 'amqplib';
import type { TestDatabase } from '../../test/support/database';
import { AMQP_URL } from '../../test/support/environment';
import { openRelayStore, RelayClaims, RelayStore } from './relay-stores';

export type { RelayClaims } from './relay-stores';

/** Rows one claim takes, and claims in flight at once: the library's defaults. */
const BATCH = 500;
const LOOPS = 4;
/** Pause of a loop that found nothing to claim. */
const IDLE_MS = 10;

/**
 * The dispatch a careful engineer writes by hand on the library's own table, as the drain's
 * second reference: claim a batch in one short transaction (`relay-stores.ts`), publish each row
 * on a shared confirm channel, await the batch's confirms, mark it DONE with one UPDATE. Four
 * loops, as the library's defaults. None of what the library adds: no claim token check on
 * settle, no retries, no per-message timeout, no headers, no trace, no events; failures throw.
 */
export class HandWrittenRelay {
  private stopped = false;
  private loops: Promise<void>[] = [];

  private constructor(
    private readonly store: RelayStore,
    private readonly connection: ChannelModel,
    private readonly channel: ConfirmChannel,
  ) {}

  /** Starts relaying from `database`'s `outbox_message` table. */
  static async start(database: TestDatabase, claims: RelayClaims = 'in-row'): Promise<HandWrittenRelay> {
    const store = await openRelayStore(database, LOOPS, claims);
    const connection = await connect(AMQP_URL);
    const channel = await connection.createConfirmChannel();
    const relay = new HandWrittenRelay(store, connection, channel);
    relay.loops = Array.from({ length: LOOPS }, () => relay.loop());
    return relay;
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

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const rows = await this.store.claim(BATCH);
      if (rows.length === 0) {
        await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
        continue;
      }
      await Promise.all(
        rows.map(
          (row) =>
            new Promise<void>((resolve, reject) =>
              this.channel.publish(
                row.exchange,
                row.routing_key,
                Buffer.from(row.payload),
                { messageId: row.message_id, type: row.message_type, contentType: 'application/json', persistent: true, mandatory: true },
                (error) => (error ? reject(error) : resolve()),
              ),
            ),
        ),
      );
      await this.store.settle(rows.map((row) => row.id));
    }
  }
}
