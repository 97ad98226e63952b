import { Logger } from '@nestjs/common';
import { isObservable, Subscription } from 'rxjs';
import { connectClient, EventClient } from './event-client';
import { ClientState, nextProbeDelayMs, stateAfterConnected, stateAfterStatus } from './client-state';

/**
 * Follows one client's connection, so that the transport's lane claims nothing while the client
 * cannot send: from the client's `status` stream where it has one, and from `connect()` failures.
 *
 * While the connection is lost it calls `connect()` now and then (1 s, doubling to 30 s). Some
 * clients only reconnect when asked: Nest's Redis client without `retryAttempts` drops its
 * connections at the first loss and makes new ones on the next `connect()`, and its TCP client
 * does the same; with no sends while unavailable, nothing else would ask.
 */
export class ClientConnection {
  private state: ClientState = 'up';
  /** Counts state changes, so that a probe answered after a newer loss does not end it. */
  private changes = 0;
  private probeDelayMs = 0;
  private probeTimer?: NodeJS.Timeout;
  private probing = false;
  private closed = false;
  private subscription?: Subscription;
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly client: EventClient,
    private readonly name: string,
    private readonly logger: Logger,
  ) {}

  /** Starts following the client's `status`, if it reports one (Nest 11 clients replay their latest). */
  watch(): void {
    const status = this.client.status;
    if (!isObservable(status)) return;
    this.subscription = status.subscribe({
      next: (value) => this.moveTo(stateAfterStatus(this.state, String(value)), `it reported "${String(value)}"`),
      // A status stream that fails tells nothing more; sends still find out for themselves.
      error: () => undefined,
    });
  }

  get available(): boolean {
    return this.state === 'up';
  }

  /** Describes why sends wait, for the errors and logs that say so. */
  get description(): string {
    return this.state === 'blocked' ? 'blocked by its broker' : 'not connected';
  }

  onAvailable(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A `connect()` made for a send failed or timed out: the client is taken for lost until a probe connects. */
  connectFailed(cause: unknown): void {
    this.moveTo('lost', `connecting failed (${describe(cause)})`);
  }

  /** Connects once, in the background, so that the state is known before the first send. */
  connectEarly(): void {
    connectClient(this.client).then(
      () => undefined,
      (error: unknown) => this.connectFailed(error),
    );
  }

  close(): void {
    this.closed = true;
    this.subscription?.unsubscribe();
    clearTimeout(this.probeTimer);
    this.listeners.clear();
  }

  private moveTo(next: ClientState, why: string): void {
    if (next === this.state || this.closed) return;
    const wasAvailable = this.available;
    this.state = next;
    this.changes++;
    if (this.available) {
      clearTimeout(this.probeTimer);
      this.probeTimer = undefined;
      this.probeDelayMs = 0;
      this.logger.log(`ClientProxy ${this.name} can send again (${why}): its messages are sent`);
      this.wakeListeners();
      return;
    }
    if (wasAvailable) this.logger.warn(`ClientProxy ${this.name} is ${this.description} (${why}): its messages wait, unattempted`);
    if (next === 'lost') this.scheduleProbe();
  }

  private scheduleProbe(): void {
    if (this.probeTimer || this.probing || this.closed) return;
    this.probeDelayMs = nextProbeDelayMs(this.probeDelayMs);
    this.probeTimer = setTimeout(() => this.probe(), this.probeDelayMs);
    this.probeTimer.unref();
  }

  private probe(): void {
    this.probeTimer = undefined;
    const changes = this.changes;
    this.probing = true;
    connectClient(this.client)
      .then(
        () => {
          if (this.changes === changes) this.moveTo(stateAfterConnected(this.state), 'connect() succeeded');
        },
        () => undefined,
      )
      .finally(() => {
        this.probing = false;
        if (this.state === 'lost') this.scheduleProbe();
      });
  }

  private wakeListeners(): void {
    for (const listener of [...this.listeners]) {
      try {
        listener();
      } catch (error) {
        // Called from the client's status stream: a throw would surface as an uncaught exception.
        this.logger.error(`An onAvailable listener of ClientProxy ${this.name} threw: ${describe(error)}`);
      }
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
