/** A send waiting for its outcome, as `SendDeadlines.start` returns it. */
export interface SendDeadline {
  /** When the send is given up on, by the monotonic clock the deadlines were built with. */
  readonly at: number;
  /** Called once, at the deadline, unless the send ended before; cleared when it does. */
  expire: (() => void) | undefined;
}

/**
 * The send timeouts of one transport, all of the same length: one timer for all of them instead
 * of one per send. With thousands of sends awaiting their confirms, a timer per send was a timer
 * object, its async hooks and its list entry per message, kept alive until the confirm; here a
 * send costs one small entry. Deadlines of one length come in the order the sends started, so
 * they form a queue: the timer is set for the oldest live one, and ended sends are dropped from
 * the front as they end (confirms come mostly in order) or as the timer passes them.
 *
 * A deadline expires no earlier than `timeoutMs` after its send started, as a timer of its own
 * would. The timer keeps the process alive while a send waits, as the timers it replaces did.
 */
export class SendDeadlines {
  private readonly queue: SendDeadline[] = [];
  /** Index of the oldest entry not yet dropped: entries before it are spent. */
  private head = 0;
  private timer?: NodeJS.Timeout;

  /**
   * @param timeoutMs how long every send may wait
   * @param now a monotonic clock in milliseconds
   */
  constructor(
    private readonly timeoutMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Sends waiting, live or ended but not yet dropped. */
  get size(): number {
    return this.queue.length - this.head;
  }

  /** Starts the deadline of a send; `expire` is called at it unless `end` is called first. */
  start(expire: () => void): SendDeadline {
    const deadline: SendDeadline = { at: this.now() + this.timeoutMs, expire };
    this.queue.push(deadline);
    if (this.timer === undefined) this.arm(deadline.at);
    return deadline;
  }

  /** The send ended (confirmed or failed): its deadline no longer applies. */
  end(deadline: SendDeadline): void {
    deadline.expire = undefined;
    if (this.queue[this.head] === deadline) this.dropEnded();
  }

  /** Drops the ended entries at the front; with none left, the timer goes too, so that nothing holds the process open. */
  private dropEnded(): void {
    const { queue } = this;
    while (this.head < queue.length && queue[this.head].expire === undefined) this.head++;
    if (this.head === queue.length) {
      queue.length = 0;
      this.head = 0;
      this.disarm();
    } else if (this.head >= COMPACT_AFTER && this.head * 2 >= queue.length) {
      queue.splice(0, this.head);
      this.head = 0;
    }
  }

  /** Expires every live deadline that has come, then waits for the next one. */
  private sweep(): void {
    this.timer = undefined;
    const now = this.now();
    const { queue } = this;
    while (this.head < queue.length && queue[this.head].at <= now) {
      const deadline = queue[this.head++];
      const expire = deadline.expire;
      deadline.expire = undefined;
      if (!expire) continue;
      try {
        expire();
      } catch {
        // One send's callback that throws must not cost the sends behind it their timeouts.
      }
    }
    this.dropEnded();
    // The head is live (dropEnded passed the ended ones) and not yet due.
    if (this.head < queue.length) this.arm(queue[this.head].at);
  }

  private arm(at: number): void {
    this.disarm();
    // A timer may fire a little before its time by this clock (libuv counts from the start of its
    // loop turn): the sweep then finds the head not due and sets the timer again for the rest.
    this.timer = setTimeout(() => this.sweep(), Math.max(1, Math.ceil(at - this.now())));
  }

  private disarm(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** Spent entries kept at the front before the queue is compacted: a copy now and then, not a shift per send. */
const COMPACT_AFTER = 1_024;
