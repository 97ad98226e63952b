import { QueryRunner } from 'typeorm';

/**
 * What one part of the library remembers about each query runner's open transaction (what it
 * published, what it recorded to hand off, how the server ended it). This is the one way the
 * library keeps per-transaction state.
 *
 * It is kept by query runner, in a WeakMap, and never on the runner's `data`: TypeORM swaps
 * `data` for the caller's object for the length of a `save(…, { data })`, so what an entity
 * subscriber's publish wrote there would land on the caller's object and be missing at commit.
 * A runner that is dropped without ending its transaction takes its state with it.
 */
export class TransactionSlot<T> {
  private readonly byRunner = new WeakMap<QueryRunner, T>();

  get(runner: QueryRunner): T | undefined {
    return this.byRunner.get(runner);
  }

  /** The value for `runner`, created with `create` where there is none yet. */
  getOrCreate(runner: QueryRunner, create: () => T): T {
    let value = this.byRunner.get(runner);
    if (value === undefined) this.byRunner.set(runner, (value = create()));
    return value;
  }

  set(runner: QueryRunner, value: T): void {
    this.byRunner.set(runner, value);
  }

  has(runner: QueryRunner): boolean {
    return this.byRunner.has(runner);
  }

  /** Forgets the value for `runner` and returns it: what a transaction's end consumes. */
  take(runner: QueryRunner): T | undefined {
    const value = this.byRunner.get(runner);
    this.byRunner.delete(runner);
    return value;
  }

  delete(runner: QueryRunner): void {
    this.byRunner.delete(runner);
  }
}

/**
 * How many transaction levels `runner` has open (1: the transaction, more: savepoints). TypeORM
 * keeps it on every query runner but does not declare it; undefined where it is missing.
 */
export function depthOf(runner: QueryRunner): number | undefined {
  const depth = (runner as unknown as { transactionDepth?: unknown }).transactionDepth;
  return typeof depth === 'number' ? depth : undefined;
}
