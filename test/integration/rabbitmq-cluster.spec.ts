import { brokerName } from '../support/broker-names';
import { ClusterOutage, ClusterTrafficPlan, runClusterTraffic } from '../support/cluster-traffic';
import { describeOn, testDatabase } from '../support/database';
import { RabbitMqCluster } from '../support/rabbitmq-cluster';

const database = testDatabase('it_rabbitmq_cluster');
const unavailable = RabbitMqCluster.unavailable();

/**
 * `RABBITMQ_CLUSTER_SOAK=1` (npm run soak:rabbitmq-cluster) runs the long version: three
 * instances at 100 messages a second, the connected node and the queue leader's node each
 * stopped and then killed, with an app instance killed during every outage.
 */
const SOAK = process.env.RABBITMQ_CLUSTER_SOAK === '1';

const plan: ClusterTrafficPlan = SOAK
  ? {
      prefix: brokerName('soak.cluster'),
      instances: 3,
      perSecond: 100,
      calmSeconds: 30,
      outages: (['stop', 'kill'] as const).flatMap((how) =>
        (['connected', 'leader'] as const).map((target): ClusterOutage => ({ target, how, killInstance: true })),
      ),
      drainTimeoutMs: 300_000,
    }
  : {
      prefix: brokerName('it.cluster'),
      instances: 2,
      perSecond: 20,
      calmSeconds: 10,
      outages: [{ target: 'connected', how: 'stop', killInstance: true }],
      drainTimeoutMs: 120_000,
    };

const CLUSTER_START_TIMEOUT_MS = 600_000;

describeOn(['postgres'], 'A three-node RabbitMQ cluster losing nodes (real processes, quorum queue)', () => {
  if (unavailable) {
    it.skip(`skipped: ${unavailable}`, () => undefined);
    return;
  }
  const cluster = new RabbitMqCluster();

  beforeAll(async () => {
    await database.reset();
    await cluster.stop();
    await cluster.start();
  }, CLUSTER_START_TIMEOUT_MS);

  afterAll(() => cluster.stop(), CLUSTER_START_TIMEOUT_MS);

  it(
    'loses, repeats and strands nothing while the node the apps use goes down, and resumes on the others',
    async () => {
      const report = await runClusterTraffic(cluster, database, plan);
      // Measured, never asserted: the figures go to bench/results/rabbitmq-cluster.md.
      process.stdout.write(`RABBITMQ_CLUSTER_REPORT ${JSON.stringify({ plan, report })}\n`);
      expect(report.hostExits).toEqual([]);
      expect(report.published).toBeGreaterThan(0);
      expect({ lost: report.lost, duplicates: report.duplicates, stuck: report.stuck, manualRequired: report.manualRequired }).toEqual({
        lost: 0,
        duplicates: 0,
        stuck: 0,
        manualRequired: 0,
      });
      expect(report.handled).toBe(report.published);
    },
    CLUSTER_START_TIMEOUT_MS + plan.drainTimeoutMs + plan.outages.length * 600_000,
  );
});
