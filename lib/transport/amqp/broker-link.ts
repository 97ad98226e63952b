import type { AmqpConnectionManager } from 'amqp-connection-manager';
import type { ChannelModel } from 'amqplib';

/**
 * The state of golevelup's managed AMQP connection as the outbox sees it: connected or not,
 * blocked by a broker resource alarm or not, and an epoch that changes with every interruption,
 * so that a send can tell whether the broker went away while it waited for its confirm.
 */
export class BrokerLink {
  private interruptions = 0;
  private blocked = false;
  private readonly listeners = new Set<() => void>();
  private readonly detach: () => void;

  constructor(private readonly manager: AmqpConnectionManager) {
    const onConnect = () => {
      this.interruptions++;
      this.blocked = false;
      this.notifyAvailable();
    };
    const onDisconnect = () => this.interruptions++;
    const onBlocked = () => {
      this.interruptions++;
      this.blocked = true;
    };
    const onUnblocked = () => {
      this.blocked = false;
      this.notifyAvailable();
    };
    manager.on('connect', onConnect);
    manager.on('disconnect', onDisconnect);
    manager.on('blocked', onBlocked);
    manager.on('unblocked', onUnblocked);
    this.detach = () => {
      manager.removeListener('connect', onConnect);
      manager.removeListener('disconnect', onDisconnect);
      manager.removeListener('blocked', onBlocked);
      manager.removeListener('unblocked', onUnblocked);
    };
  }

  /** The connection to publish on, while connected and not blocked. */
  get connection(): ChannelModel | undefined {
    return this.blocked ? undefined : this.manager.connection;
  }

  get isAvailable(): boolean {
    return this.connection !== undefined;
  }

  /** A mark to compare with `interruptedSince()` later. */
  get epoch(): number {
    return this.interruptions;
  }

  /** Whether the link was lost or blocked at any time since `epoch`, or is now. */
  interruptedSince(epoch: number): boolean {
    return this.interruptions !== epoch || !this.isAvailable;
  }

  onAvailable(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.detach();
    this.listeners.clear();
  }

  private notifyAvailable(): void {
    if (!this.isAvailable) return;
    for (const listener of this.listeners) listener();
  }
}
