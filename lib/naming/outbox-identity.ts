import { emit, OutboxEventMap, OutboxEventName } from '../observability/outbox-events';
import { describeOutbox } from './outbox-name';

/**
 * Which outbox a module instance is: provided inside each `OutboxModule` (never exported), so
 * that what is keyed per process (scheduler names, events, log contexts) stays apart when an
 * application has several outboxes. The default outbox keeps every name it always had.
 */
export class OutboxIdentity {
  /**
   * @param name the outbox's name; undefined for the default outbox
   * @param transactionConnectionName the nestjs-cls transactional connection it joins; undefined for the unnamed one
   */
  constructor(
    readonly name: string | undefined,
    readonly transactionConnectionName?: string,
  ) {}

  /** A scheduler interval or timeout name of this outbox: `nestjs-outbox:retention` becomes `nestjs-outbox:billing:retention`. */
  scheduleName(base: string): string {
    if (this.name === undefined) return base;
    return base.startsWith('nestjs-outbox:') ? `nestjs-outbox:${this.name}:${base.slice('nestjs-outbox:'.length)}` : `${base}:${this.name}`;
  }

  /** A logger context of this outbox: `StuckDetector` becomes `StuckDetector[billing]`. */
  logContext(base: string): string {
    return this.name === undefined ? base : `${base}[${this.name}]`;
  }

  /** `the outbox "billing"` or `the default outbox`, for messages. */
  describe(): string {
    return describeOutbox(this.name);
  }

  /** Publishes an event of this outbox: a named outbox's events carry its name in `outbox`. */
  emit<N extends OutboxEventName>(event: N, build: () => OutboxEventMap[N]): void {
    const name = this.name;
    emit(event, name === undefined ? build : () => ({ ...build(), outbox: name }));
  }
}
