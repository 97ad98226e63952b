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

/**
 * A publication awaiting its confirm: only what its outcome is judged by, not the publication,
 * whose content and options would otherwise live as long (the usual wait outlives a young
 * generation's collections, so each would be copied, then promoted).
 */
interface Pending {
  messageId: string;
  exchange: string;
  settled(outcome: PublishOutcome): void;
}

/** The outcomes that carry nothing of their own, shared rather than built per message. */
const CONFIRMED: PublishOutcome = Object.freeze({ kind: 'confirmed' });
const RETURNED: PublishOutcome = Object.freeze({ kind: 'returned' });
const NACKED: PublishOutcome = Object.freeze({ kind: 'nacked' });
const CLOSED_INNOCENT: PublishOutcome = Object.freeze({ kind: 'closed', blame: 'innocent' });
const CLOSED_NO_BLAME: PublishOutcome = Object.freeze({ kind: 'closed', blame: 'none' });

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
  /**
   * Returns not yet matched with a confirm, counted per message id. A basic.return carries the
   * message, not its delivery tag, and arrives before that publication's confirm. Two copies of
   * one message can be unconfirmed here at once (the retry of a send that timed out), and the
   * broker may return both before it confirms either (one `multiple` ack): each return answers one
   * confirm, so no more copies count as confirmed than the broker routed.
   */
  private readonly returned = new Map<string, number>();
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
      if (messageId) this.returned.set(messageId, (this.returned.get(messageId) ?? 0) + 1);
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
    return new Promise<PublishOutcome>((resolve) => this.publishThen(publication, resolve));
  }

  /**
   * `publish` without a promise of its own: `settled` hears the outcome, once, never within this
   * call. The dispatcher's path, where every promise per message is garbage and, under an
   * AsyncLocalStorage, an async hook call too. `settled` runs inside amqplib's event handlers (or
   * a microtask), where a throw would be uncaught: it must not throw.
   */
  publishThen(publication: AmqpPublication, settled: (outcome: PublishOutcome) => void): void {
    if (this.drained) {
      void this.drained.then(() => this.publishNow(publication, settled));
      return;
    }
    this.publishNow(publication, settled);
  }

  private publishNow(publication: AmqpPublication, settled: (outcome: PublishOutcome) => void): void {
    if (!this.usable) {
      queueMicrotask(() => settled(CLOSED_INNOCENT));
      return;
    }
    const entry: Pending = { messageId: publication.messageId, exchange: publication.exchange, settled };
    this.pending.add(entry);
    let writable: boolean;
    try {
      writable = this.channel.publish(publication.exchange, publication.routingKey, publication.content, publication.options, (error) =>
        this.settle(entry, this.outcome(entry, error)),
      );
    } catch (error) {
      // Nothing was written, but amqplib had already queued this publication's confirm callback,
      // so later confirms on this channel would be matched to the wrong publications.
      this.retired = true;
      const outcome: PublishOutcome = this.closed || (error as Error).name === 'IllegalOperationError' ? CLOSED_INNOCENT : { kind: 'unencodable', error };
      queueMicrotask(() => this.settle(entry, outcome));
      return;
    }
    if (!writable) this.waitForDrain();
  }

  private settle(entry: Pending, outcome: PublishOutcome): void {
    if (!this.pending.delete(entry)) return;
    entry.settled(outcome);
    if (this.retired && this.pending.size === 0) void this.close();
  }

  async close(): Promise<void> {
    this.retired = true;
    if (this.closed) return;
    this.closed = true;
    await this.channel.close().catch(() => undefined);
  }

  private outcome(publication: Pending, error: Error | null): PublishOutcome {
    const returned = this.returned.size > 0 && this.takeReturn(publication.messageId);
    if (!error) return returned ? RETURNED : CONFIRMED;
    if (error.message === 'message nacked') return NACKED;
    const closeError = this.closeError;
    if (!closeError) return CLOSED_NO_BLAME;
    if (!this.blamed) return { kind: 'closed', blame: 'suspect', error: closeError };
    return { kind: 'closed', blame: this.blamed.has(publication.exchange) ? 'culprit' : 'innocent', error: closeError };
  }

  /** Matches one return of `messageId`, if one came, with the confirm at hand. */
  private takeReturn(messageId: string): boolean {
    const count = this.returned.get(messageId);
    if (count === undefined) return false;
    if (count > 1) this.returned.set(messageId, count - 1);
    else this.returned.delete(messageId);
    return true;
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
