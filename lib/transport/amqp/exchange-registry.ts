import type { ChannelModel } from 'amqplib';
import { TransportUnavailableError } from '../../errors';

const NOT_FOUND = 404;

/**
 * Knows which exchanges exist, per connection: each exchange is checked once (a passive declare
 * on a short-lived channel of its own) before the first publication to it. Publishing to a missing
 * exchange makes the broker close the channel, failing every message in flight on it; checked
 * first, a typo in an exchange name fails its own message and nothing else.
 */
export class ExchangeRegistry {
  private readonly known = new WeakMap<ChannelModel, Set<string>>();
  private readonly checking = new WeakMap<ChannelModel, Map<string, Promise<boolean>>>();

  /** `checkTimeoutMs`: how long a check may go unanswered before the broker is taken for unavailable. */
  constructor(private readonly checkTimeoutMs: number) {}

  /** Whether `exchange` exists on the broker of `connection`. The default exchange ('') always does. */
  exists(connection: ChannelModel, exchange: string): boolean | Promise<boolean> {
    if (this.isKnown(connection, exchange)) return true;
    let checks = this.checking.get(connection);
    if (!checks) this.checking.set(connection, (checks = new Map()));
    let check = checks.get(exchange);
    if (!check) {
      // Bounded, and forgotten when it fails or runs out: a check left hanging would otherwise be
      // awaited by every later send to the exchange on this connection, each timing out and
      // spending an attempt, instead of being asked again.
      const started: Promise<boolean> = withTimeout(this.check(connection, exchange), this.checkTimeoutMs, exchange).finally(() => {
        if (checks.get(exchange) === started) checks.delete(exchange);
      });
      check = started;
      checks.set(exchange, check);
    }
    return check;
  }

  /** Whether `exchange` is known to exist on the broker of `connection`, without checking. */
  isKnown(connection: ChannelModel, exchange: string): boolean {
    return exchange === '' || this.knownOn(connection).has(exchange);
  }

  /** Forgets that `exchange` exists (the broker said otherwise since). */
  forget(connection: ChannelModel, exchange: string): void {
    this.knownOn(connection).delete(exchange);
  }

  private knownOn(connection: ChannelModel): Set<string> {
    let known = this.known.get(connection);
    if (!known) this.known.set(connection, (known = new Set()));
    return known;
  }

  private async check(connection: ChannelModel, exchange: string): Promise<boolean> {
    let channel;
    try {
      channel = await connection.createChannel();
    } catch (error) {
      throw new TransportUnavailableError(`Could not open a channel to check exchange ${JSON.stringify(exchange)}`, { cause: error });
    }
    // A 404 closes this channel; without a listener its 'error' event would end the process.
    channel.on('error', () => undefined);
    try {
      await channel.checkExchange(exchange);
      this.knownOn(connection).add(exchange);
      return true;
    } catch (error) {
      if ((error as { code?: number }).code === NOT_FOUND) return false;
      // amqplib could not encode the name (e.g. over 255 bytes): the message's fault, not the broker's.
      if (error instanceof TypeError || error instanceof RangeError) throw error;
      throw new TransportUnavailableError(`Could not check exchange ${JSON.stringify(exchange)}`, { cause: error });
    } finally {
      await channel.close().catch(() => undefined);
    }
  }
}

/** `check`, or a TransportUnavailableError once `timeoutMs` pass first (the check runs on, unobserved). */
function withTimeout(check: Promise<boolean>, timeoutMs: number, exchange: string): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new TransportUnavailableError(`The broker did not answer the check of exchange ${JSON.stringify(exchange)} within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  check.catch(() => undefined);
  return Promise.race([check, timedOut]).finally(() => clearTimeout(timer));
}
