import { connect } from 'amqplib';
import { ChildApp, ChildExit } from './child-app';
import type { TestDatabase } from './database';
import type { InboxFixtureConfig } from './inbox-fixture';
import type { ClusterNode, RabbitMqCluster } from './rabbitmq-cluster';
import { STARTUP_TIMEOUT_MS, waitUntil } from './wait';

/** Which node an outage takes down, and how. */
export interface ClusterOutage {
  /** `connected`: the node holding most of the apps' connections; `leader`: the node of the queue's leader. */
  target: 'connected' | 'leader';
  /** `stop`: a graceful shutdown (clients get CONNECTION_FORCED); `kill`: SIGKILL of the node's VM. */
  how: 'stop' | 'kill';
  /** SIGKILL one app instance while the node is down, and start a replacement. */
  killInstance: boolean;
}

/** A run of steady traffic through the outbox and a transactional inbox, across node outages. */
export interface ClusterTrafficPlan {
  /** Names the run's exchanges, queue and child processes. */
  prefix: string;
  instances: number;
  /** Messages published a second, all instances together. */
  perSecond: number;
  /** Seconds of traffic before the first outage, between outages (after the node is back) and after the last. */
  calmSeconds: number;
  outages: ClusterOutage[];
  /** Longest to wait for everything published to be handled once publishing stopped. */
  drainTimeoutMs: number;
}

/** What an outage did to the traffic. */
export interface OutageReport extends ClusterOutage {
  node: ClusterNode;
  /** Longest time without a confirmed publish by any instance, from the moment the node was taken down. */
  publishGapMs: number;
  /**
   * Longest time one instance confirmed no publish, from the moment the node was taken down, among
   * the instances that ran through the outage: what an instance connected to the lost node sees.
   */
  instancePublishGapMs: number;
  /** Longest time without a handled delivery, from the moment the node was taken down. */
  consumeGapMs: number;
}

/** The run's outcome; every count but `published` and `handled` must be 0. */
export interface ClusterTrafficReport {
  published: number;
  /** The rate the instances kept up, from the first to the last message published. */
  publishedPerSecond: number;
  handled: number;
  /** Messages committed to the outbox whose effect never happened. */
  lost: number;
  /** Effects that happened more than once for one message id. */
  duplicates: number;
  /** Outbox and inbox rows not settled when the drain timed out. */
  stuck: number;
  manualRequired: number;
  /** Outbox rows charged a failed attempt (a transport that is down costs none). */
  chargedAttempts: number;
  /** App instances that exited without being killed by the run. */
  hostExits: string[];
  outages: OutageReport[];
}

const MESSAGE_TYPE = 'order.placed';
const CONSUMER = 'cluster-orders';

/**
 * Short leases, so that the rows a killed instance claimed come back within the run; a send timeout
 * long enough for a reconnection to another node.
 */
const OUTBOX_TIMINGS = { claimLeaseMs: 30_000, sendTimeoutMs: 10_000, pollIntervalMs: 250 };

/**
 * Drives the library through `cluster` with real app instances: each publishes steadily through
 * the outbox to a durable exchange whose quorum queue a transactional `@InboxHandler` consumes
 * (its effect: a `test_effect` row per message id). Takes nodes down as `plan.outages` says, one
 * at a time (a quorum queue of three keeps working with two), starting each again before the next.
 * Leaves no app instance running; the node of the last outage stays down.
 */
export async function runClusterTraffic(cluster: RabbitMqCluster, database: TestDatabase, plan: ClusterTrafficPlan): Promise<ClusterTrafficReport> {
  const inbox = inboxConfig(plan.prefix);
  await prepareBroker(cluster, inbox);
  const instances = new Set<ChildApp>();
  const killed = new Set<ChildApp>();
  const unplannedExits: string[] = [];
  let started = 0;
  let stopping = false;
  const startInstance = async () => {
    started++;
    const app = await ChildApp.start(
      `${plan.prefix}-app-${started}`,
      {
        database,
        amqpUrl: cluster.uris,
        inbox,
        outbox: OUTBOX_TIMINGS,
        steadyPublisher: { exchange: inbox.exchange, type: MESSAGE_TYPE, perSecond: plan.perSecond / plan.instances, firstOrderId: started * 10_000_000 },
      },
      2 * STARTUP_TIMEOUT_MS,
    );
    instances.add(app);
    void app.exited.then((exit: ChildExit) => {
      instances.delete(app);
      if (!killed.has(app) && !stopping) unplannedExits.push(`${app.name} (${exit.signal ?? `code ${exit.code}`})${app.diagnostics()}`);
    });
  };

  try {
    // One after another: the first creates the tables; instances that start together on a new
    // schema would race to create them.
    for (let i = 0; i < plan.instances; i++) await startInstance();
    await waitUntil(async () => (await countEffects(database)) > 0, 'the first message is handled', 2 * STARTUP_TIMEOUT_MS);
    await calm(plan.calmSeconds);

    const outages: OutageReport[] = [];
    for (const outage of plan.outages) {
      const node = outage.target === 'leader' ? await cluster.leaderOf(inbox.consumers[0].queue) : await mostConnected(cluster);
      const downAt = await databaseNow(database);
      await (outage.how === 'kill' ? cluster.killNode(node) : cluster.stopNode(node));
      const downUntil = await databaseNow(database);
      if (outage.killInstance) {
        const victim = [...instances][0];
        killed.add(victim);
        await victim.kill('SIGKILL');
        await startInstance();
      }
      await waitUntil(
        async () => (await lastConfirmed(database)) > downUntil && (await lastHandled(database)) > downUntil,
        `publishing and consuming resume without node ${node}`,
        2 * STARTUP_TIMEOUT_MS,
      );
      outages.push({
        ...outage,
        node,
        publishGapMs: longestGap(downAt, await confirmedSince(database, downAt)),
        instancePublishGapMs: await longestInstanceGap(database, downAt),
        consumeGapMs: longestGap(downAt, await handledSince(database, downAt)),
      });
      // Back before the next outage: a quorum queue of three needs two members.
      if (outages.length < plan.outages.length) await cluster.startNode(node);
      await calm(plan.calmSeconds);
    }

    await Promise.all([...instances].map((app) => pausePublishing(app)));
    const published = await countPublished(database);
    await waitUntil(
      async () => (await unsettled(database)) === 0 && (await countEffects(database)) >= published,
      'every published message is handled',
      plan.drainTimeoutMs,
    ).catch(
      () => undefined, // counted below as lost or stuck
    );
    stopping = true;
    await Promise.all([...instances].map((app) => app.stop()));
    const [span] = await database.sql(
      `SELECT ${epochMs('max(created_at)')} - ${epochMs('min(created_at)')} AS ms FROM {outbox_message} WHERE message_type = ?`,
      [MESSAGE_TYPE],
    );
    return {
      published,
      publishedPerSecond: Math.round((published * 1_000) / Math.max(1, Number(span.ms))),
      handled: await countEffects(database),
      lost: Number((await database.sql(lostSql))[0].n),
      duplicates: Number((await database.sql(duplicatesSql))[0].n),
      stuck: await unsettled(database),
      manualRequired: await countManual(database),
      chargedAttempts: Number((await database.sql(`SELECT count(*) AS n FROM {outbox_message} WHERE attempts > 0`))[0].n),
      hostExits: unplannedExits,
      outages,
    };
  } finally {
    stopping = true;
    await Promise.all([...instances].map((app) => app.kill('SIGKILL')));
  }
}

function inboxConfig(prefix: string): InboxFixtureConfig {
  return {
    exchange: `${prefix}.in`,
    routingKey: MESSAGE_TYPE,
    outExchange: `${prefix}.out`,
    deadLetterExchange: `${prefix}.dlx`,
    consumers: [{ name: CONSUMER, queue: `${prefix}.orders` }],
    mode: 'transactional',
    quorumQueues: true,
  };
}

/**
 * Durable exchanges (a node's loss must not take them), the consumers' quorum queue declared as
 * the apps declare it, and a quorum queue bound to the exchange the handler publishes to, so that
 * those messages are routed (bounded: nobody reads it).
 */
async function prepareBroker(cluster: RabbitMqCluster, inbox: InboxFixtureConfig): Promise<void> {
  const connection = await connect(cluster.uris[0]);
  try {
    const channel = await connection.createChannel();
    for (const exchange of [inbox.exchange, inbox.outExchange, inbox.deadLetterExchange]) await channel.assertExchange(exchange, 'topic', { durable: true });
    const sink = `${inbox.outExchange}.sink`;
    for (const queue of [inbox.consumers[0].queue, sink]) await channel.deleteQueue(queue);
    await channel.assertQueue(inbox.consumers[0].queue, {
      durable: true,
      arguments: { 'x-queue-type': 'quorum', 'x-dead-letter-exchange': inbox.deadLetterExchange },
    });
    await channel.assertQueue(sink, { durable: true, arguments: { 'x-queue-type': 'quorum', 'x-max-length': 1_000 } });
    await channel.bindQueue(sink, inbox.outExchange, '#');
  } finally {
    await connection.close();
  }
}

async function mostConnected(cluster: RabbitMqCluster): Promise<ClusterNode> {
  const counts = Object.entries(await cluster.connectionsByNode()) as [ClusterNode, number][];
  return counts.sort(([, x], [, y]) => y - x)[0][0];
}

async function pausePublishing(app: ChildApp): Promise<void> {
  app.process.stdin!.write('PAUSE\n');
  await app.waitForOutput(/^PAUSED \d+$/m, STARTUP_TIMEOUT_MS);
}

const calm = (seconds: number) => new Promise((resolve) => setTimeout(resolve, seconds * 1_000));

/** The database clock in ms since the epoch: every time of the run is read from it. */
async function databaseNow(database: TestDatabase): Promise<number> {
  return Number((await database.sql(`SELECT extract(epoch FROM clock_timestamp()) * 1000 AS t`))[0].t);
}

const epochMs = (column: string) => `extract(epoch FROM ${column}) * 1000`;

async function lastConfirmed(database: TestDatabase): Promise<number> {
  const [row] = await database.sql(`SELECT max(${epochMs('processed_at')}) AS t FROM {outbox_message} WHERE message_type = ? AND status = 'DONE'`, [
    MESSAGE_TYPE,
  ]);
  return Number(row.t ?? 0);
}

async function lastHandled(database: TestDatabase): Promise<number> {
  const [row] = await database.sql(`SELECT max(${epochMs('created_at')}) AS t FROM {inbox_message} WHERE consumer = ?`, [CONSUMER]);
  return Number(row.t ?? 0);
}

async function confirmedSince(database: TestDatabase, since: number): Promise<number[]> {
  const rows = await database.sql(
    `SELECT ${epochMs('processed_at')} AS t FROM {outbox_message} WHERE message_type = ? AND status = 'DONE' AND ${epochMs('processed_at')} > ? ORDER BY processed_at`,
    [MESSAGE_TYPE, since],
  );
  return rows.map((row) => Number(row.t));
}

/** `longestGap` per dispatching instance (`claimed_by`) that confirmed publishes before `since`. */
async function longestInstanceGap(database: TestDatabase, since: number): Promise<number> {
  const rows = await database.sql(
    `SELECT claimed_by AS instance, ${epochMs('processed_at')} AS t FROM {outbox_message}
     WHERE message_type = ? AND status = 'DONE' AND ${epochMs('processed_at')} > ?
       AND claimed_by IN (SELECT claimed_by FROM {outbox_message} WHERE status = 'DONE' AND ${epochMs('processed_at')} BETWEEN ? AND ?)
     ORDER BY processed_at`,
    [MESSAGE_TYPE, since, since - 5_000, since],
  );
  const byInstance = new Map<string, number[]>();
  for (const row of rows) {
    const times = byInstance.get(row.instance) ?? [];
    times.push(Number(row.t));
    byInstance.set(row.instance, times);
  }
  return Math.max(0, ...[...byInstance.values()].map((times) => longestGap(since, times)));
}

async function handledSince(database: TestDatabase, since: number): Promise<number[]> {
  const rows = await database.sql(
    `SELECT ${epochMs('created_at')} AS t FROM {inbox_message} WHERE consumer = ? AND ${epochMs('created_at')} > ? ORDER BY created_at`,
    [CONSUMER, since],
  );
  return rows.map((row) => Number(row.t));
}

/** The longest stretch from `from` through the sorted `times` without one of them. */
export function longestGap(from: number, times: number[]): number {
  let longest = 0;
  let previous = from;
  for (const time of times) {
    longest = Math.max(longest, time - previous);
    previous = time;
  }
  return Math.round(longest);
}

async function countPublished(database: TestDatabase): Promise<number> {
  return Number((await database.sql(`SELECT count(*) AS n FROM {outbox_message} WHERE message_type = ?`, [MESSAGE_TYPE]))[0].n);
}

async function countEffects(database: TestDatabase): Promise<number> {
  return Number((await database.sql(`SELECT count(*) AS n FROM {test_effect} WHERE consumer = ?`, [CONSUMER]))[0].n);
}

async function unsettled(database: TestDatabase): Promise<number> {
  const open = `status IN ('PENDING', 'PROCESSING', 'FAILED')`;
  const [outbox] = await database.sql(`SELECT count(*) AS n FROM {outbox_message} WHERE ${open}`);
  const [inbox] = await database.sql(`SELECT count(*) AS n FROM {inbox_message} WHERE ${open}`);
  return Number(outbox.n) + Number(inbox.n);
}

async function countManual(database: TestDatabase): Promise<number> {
  const [outbox] = await database.sql(`SELECT count(*) AS n FROM {outbox_message} WHERE status = 'MANUAL_REQUIRED'`);
  const [inbox] = await database.sql(`SELECT count(*) AS n FROM {inbox_message} WHERE status = 'MANUAL_REQUIRED'`);
  return Number(outbox.n) + Number(inbox.n);
}

const lostSql = `SELECT count(*) AS n FROM {outbox_message} o WHERE o.message_type = '${MESSAGE_TYPE}'
  AND NOT EXISTS (SELECT 1 FROM {test_effect} e WHERE e.message_id = CAST(o.message_id AS text))`;
const duplicatesSql = `SELECT count(*) AS n FROM (SELECT message_id FROM {test_effect} GROUP BY message_id HAVING count(*) > 1) d`;
