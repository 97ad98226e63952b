import { setTimeout as sleep } from 'node:timers/promises';

/** What emits golevelup's connection events: amqp-connection-manager's managed connection. */
export interface ConnectionEvents {
  on(event: 'disconnect', listener: () => void): unknown;
  removeListener(event: 'disconnect', listener: () => void): unknown;
}

/**
 * The waits of deliveries held before they are handed back to the broker (a failed attempt's
 * backoff, a pause while the database is unavailable). A held delivery occupies a prefetch slot
 * and is settled on the channel it came on; once that channel is gone the broker has already
 * taken the delivery back, so every wait ends when a watched connection drops, and at shutdown,
 * so that closing the application does not wait out backoffs. A wait never rejects.
 */
export class DeliveryHolds {
  private readonly waiting = new Set<AbortController>();
  private readonly unwatch: (() => void)[] = [];
  private closed = false;

  /** Releases every hold whenever `connection` disconnects. */
  watch(connection: ConnectionEvents): void {
    const release = () => this.releaseAll();
    connection.on('disconnect', release);
    this.unwatch.push(() => connection.removeListener('disconnect', release));
  }

  /** Resolves after `ms`, or earlier when the holds are released; at once after `close()`. */
  async hold(ms: number): Promise<void> {
    if (this.closed) return;
    const controller = new AbortController();
    this.waiting.add(controller);
    try {
      await sleep(ms, undefined, { signal: controller.signal });
    } catch {
      // Aborted: released early.
    } finally {
      this.waiting.delete(controller);
    }
  }

  releaseAll(): void {
    for (const controller of this.waiting) controller.abort();
    this.waiting.clear();
  }

  /** Releases every hold, holds nothing from now on, and stops watching connections. */
  close(): void {
    this.closed = true;
    this.releaseAll();
    for (const stop of this.unwatch.splice(0)) stop();
  }
}
