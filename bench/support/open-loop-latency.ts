import { randomUUID } from 'node:crypto';
import { Channel, ChannelModel, connect } from 'amqplib';
import { AMQP_URL } from '../../test/support/environment';

const DELIVERY_TIMEOUT_MS = 30_000;

/** Latency percentiles of one open-loop run, in ms, and the rate the transactions committed at. */
export interface RunResult {
  committedPerSecond: number;
  /** CPU time of this process per message (µs), from the first transaction until the last message was consumed. */
  cpuPerMessage: number;
  p50: number;
  p99: number;
  max: number;
}

/** Commit and consumption times of one message, by message id. */
export type Timings = Map<string, { committedAt?: number; consumedAt?: number }>;

/** One publishing transaction; resolves once COMMIT has. */
export type Publish = (messageId: string) => Promise<void>;

/**
 * Offers `rate` publishing transactions per second for `durationMs` (open loop: a timer starts
 * each one whatever the previous ones are doing), waits until every message was consumed, and
 * returns the latency percentiles of that run in ms, from just after COMMIT resolved until the
 * consumer stamped the message in `timings`.
 */
export async function offer(rate: number, durationMs: number, publish: Publish, timings: Timings): Promise<RunResult> {
  timings.clear();
  const inFlight = new Set<Promise<void>>();
  let failure: Error | undefined;
  let started = 0;
  const cpuBefore = process.cpuUsage();
  const begin = performance.now();
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const elapsed = performance.now() - begin;
      const due = Math.min(Math.floor((elapsed / 1000) * rate), Math.floor((durationMs / 1000) * rate));
      while (started < due) {
        started++;
        const messageId = randomUUID();
        timings.set(messageId, {});
        const transaction = publish(messageId).then(
          () => {
            timings.get(messageId)!.committedAt = performance.now();
          },
          (error: unknown) => {
            failure ??= error instanceof Error ? error : new Error(String(error));
          },
        );
        inFlight.add(transaction);
        void transaction.finally(() => inFlight.delete(transaction));
      }
      if (elapsed >= durationMs) {
        clearInterval(timer);
        resolve();
      }
    }, 1);
  });
  await Promise.all(inFlight);
  const committedPerSecond = started / ((performance.now() - begin) / 1000);
  if (failure) throw failure;
  const deadline = performance.now() + DELIVERY_TIMEOUT_MS;
  while ([...timings.values()].some((t) => t.consumedAt === undefined)) {
    if (performance.now() > deadline) throw new Error(`messages not consumed within ${DELIVERY_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const cpu = process.cpuUsage(cpuBefore);
  // A message consumed before its COMMIT's promise settled counts as 0 ms.
  const latencies = [...timings.values()].map((t) => Math.max(0, t.consumedAt! - t.committedAt!)).sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)];
  return { committedPerSecond, cpuPerMessage: (cpu.user + cpu.system) / started, p50: at(0.5), p99: at(0.99), max: latencies[latencies.length - 1] };
}

/** A plain amqplib consumer on `queue` that stamps each message's arrival in `timings`. */
export async function startConsumer(queue: string, timings: Timings): Promise<{ close(): Promise<void> }> {
  const connection: ChannelModel = await connect(AMQP_URL);
  const channel: Channel = await connection.createChannel();
  await channel.consume(
    queue,
    (message) => {
      if (!message) return;
      const timing = timings.get(message.properties.messageId as string);
      if (timing && timing.consumedAt === undefined) timing.consumedAt = performance.now();
    },
    { noAck: true },
  );
  return { close: () => connection.close().catch(() => undefined) };
}
