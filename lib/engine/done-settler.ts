import { persistently } from './persistently';
import { ClaimRef } from './state-table';

/** What a `DoneSettler` needs from its owner. */
export interface DoneSettlerSpec<T extends ClaimRef> {
  /** Marks `rows` DONE, fenced by their claim tokens; resolves with how many it changed. */
  settle(rows: T[]): Promise<number>;
  /** How long rows wait for others to share their statement. */
  lingerMs: number;
  /** Rows that go at once, without waiting out the linger. */
  maxRows: number;
  /** After each statement: how many rows it was given and how many it changed. */
  settled(rows: number, changed: number): void;
  /** A statement that failed on every try: its rows stay claimed until the stuck detector reclaims them. */
  failed(rows: number, error: unknown): void;
}

/**
 * Marks sent rows DONE several batches at a time. A row's message is already with its receiver
 * when it gets here, so nothing waits for its DONE but the table: a batch hands its rows over and
 * goes on sending, and the rows of every batch that finishes within `lingerMs` share one
 * statement. Under a steady stream of small batches (a message or two each) that is one settle
 * statement per linger instead of one per batch; a full batch goes at once.
 */
export class DoneSettler<T extends ClaimRef> {
  private queued: T[] = [];
  private timer?: NodeJS.Timeout;
  private readonly running = new Set<Promise<void>>();
  /** Rows handed over and not yet answered for (queued, or in a statement in flight). */
  private unsettled = 0;

  constructor(private readonly spec: DoneSettlerSpec<T>) {}

  /** Rows handed over and not yet settled. */
  get pending(): number {
    return this.unsettled;
  }

  /** Settles `rows` within `lingerMs`, with whatever else comes meanwhile. Never throws. */
  add(rows: T[]): void {
    if (rows.length === 0) return;
    for (const row of rows) this.queued.push(row);
    this.unsettled += rows.length;
    if (this.queued.length >= this.spec.maxRows) return this.flush();
    if (this.timer) return;
    this.timer = setTimeout(() => this.flush(), this.spec.lingerMs);
    // Shutdown flushes (see idle()); a process that ends otherwise leaves them to the stuck detector.
    this.timer.unref();
  }

  /** Settles what is queued now, and resolves once every statement handed over so far is answered. */
  async idle(): Promise<void> {
    this.flush();
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.queued.length === 0) return;
    const rows = this.queued;
    this.queued = [];
    // Retried: a lost settle would leave its rows PROCESSING until the stuck detector reclaims them.
    const statement = persistently(() => this.spec.settle(rows))
      .then(
        (changed) => this.spec.settled(rows.length, changed),
        (error: unknown) => this.spec.failed(rows.length, error),
      )
      // An owner's callback that throws must not become an unhandled rejection.
      .catch(() => undefined)
      .finally(() => {
        this.unsettled -= rows.length;
        this.running.delete(statement);
      });
    this.running.add(statement);
  }
}
