import { ConsoleLogger, INestApplicationContext } from '@nestjs/common';
import { metrics } from '@opentelemetry/api';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { DataSource } from 'typeorm';
import { NonRetryableError, OutboxService } from '../../lib';
import { CapturingOutboxTransport, OUTBOX_TEST_OPTIONS, OutboxTestKit } from '../../lib/testing';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { describeOn, testDatabase } from '../support/database';
import { InboxFixtureConfig, inboxFixtureProviders } from '../support/inbox-fixture';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, waitUntil } from '../support/wait';

const database = testDatabase('it_outbox_alert_signals');
const PREFIX = brokerName('it.alert-signals');

const config: InboxFixtureConfig = {
  exchange: `${PREFIX}.orders`,
  routingKey: 'order.paid',
  outExchange: `${PREFIX}.inventory`,
  deadLetterExchange: `${PREFIX}.dlx`,
  consumers: [{ name: 'inventory', queue: `${PREFIX}.inventory` }],
  maxAttempts: 3,
};

/** The value of the scrape's sample `name{labels…}` whose labels include every one of `labels`; undefined when none. */
function sample(scrape: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of scrape.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    if (Object.entries(labels).every(([key, value]) => match[2].includes(`${key}="${value}"`))) return Number(match[3]);
  }
  return undefined;
}

// As outbox-metrics.spec.ts: not on SQLite, where some events now and then miss the recorders.
describeOn(['postgres', 'mariadb', 'mysql'], 'What alerts read: the Prometheus scrape and the give-up log', () => {
  let app: INestApplicationContext;
  let exporter: PrometheusExporter;
  let broker: BrokerConnection;
  const errorLines: string[] = [];

  /** The text a Prometheus server would scrape from the application, through the exporter users install. */
  async function scrape(): Promise<string> {
    const { resourceMetrics } = await exporter.collect();
    return new PrometheusSerializer().serialize(resourceMetrics);
  }

  beforeAll(async () => {
    await database.reset();
    broker = await BrokerConnection.open();
    await broker.prepareInboxes([config]);
    exporter = new PrometheusExporter({ preventServerStart: true });
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [exporter] }));
    const error = ConsoleLogger.prototype.error;
    jest.spyOn(ConsoleLogger.prototype, 'error').mockImplementation(function (this: ConsoleLogger, message: unknown, ...rest: unknown[]) {
      errorLines.push(String(message));
      return error.call(this, message, ...rest);
    });
    app = await createTestApp({
      database,
      statics: { transport: CapturingOutboxTransport },
      outbox: { ...OUTBOX_TEST_OPTIONS },
      providers: inboxFixtureProviders(config),
    });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    jest.restoreAllMocks();
    await broker?.close();
    metrics.disable();
  });

  it('exports every counter at 0 from start-up, per transport and per consumer', async () => {
    const text = await scrape();
    const outbox = { outbox_table: 'outbox', outbox_transport: 'default' };
    const inbox = { outbox_table: 'inbox', messaging_consumer_group_name: 'inventory' };
    expect(sample(text, 'outbox_manual_required_total', outbox)).toBe(0);
    expect(sample(text, 'outbox_manual_required_total', inbox)).toBe(0);
    expect(sample(text, 'outbox_retries_total', outbox)).toBe(0);
    expect(sample(text, 'outbox_retries_total', inbox)).toBe(0);
    expect(sample(text, 'outbox_messages_published_total', { outbox_transport: 'default' })).toBe(0);
    expect(sample(text, 'outbox_messages_sent_total', { outbox_transport: 'default' })).toBe(0);
    expect(sample(text, 'outbox_inbox_received_total', { messaging_consumer_group_name: 'inventory' })).toBe(0);
    expect(sample(text, 'outbox_abandoned_total', { outbox_table: 'outbox' })).toBe(0);
    expect(sample(text, 'outbox_parked_keys', outbox)).toBe(0);
    expect(sample(text, 'outbox_parked_keys', inbox)).toBe(0);
  });

  it('reports whether each transport can send', async () => {
    const kit = OutboxTestKit.from(app);
    expect(sample(await scrape(), 'outbox_transport_up', { outbox_transport: 'default' })).toBe(1);
    kit.transport.setAvailable(false);
    try {
      expect(sample(await scrape(), 'outbox_transport_up', { outbox_transport: 'default' })).toBe(0);
    } finally {
      kit.transport.setAvailable(true);
    }
  });

  it(
    'names durations in seconds, counts a parked key, and logs the give-up with its message',
    async () => {
      const outbox = app.get(OutboxService);
      const kit = OutboxTestKit.from(app);
      const ids: string[] = [];
      await app.get(DataSource).transaction(async (manager) => {
        for (const n of [1, 2])
          ids.push(
            (
              await outbox.publish(
                { type: 'ledger.posted', exchange: 'ledger', routingKey: 'ledger.posted', orderingKey: 'account-7', payload: { n } },
                { manager },
              )
            ).messageId,
          );
        // The key's head is sent first, and alone: the next send is it.
        kit.transport.failNext(1, () => new NonRetryableError('ledger refused the entry'));
      });
      await kit.flush();
      // Another key's message goes past the parked one.
      await app
        .get(DataSource)
        .transaction((manager) => outbox.publish({ type: 'order.paid', exchange: 'orders', routingKey: 'order.paid', payload: {} }, { manager }));
      await kit.flush();
      // Once in a full run on a loaded machine (MariaDB) the give-up was recorded only after
      // flush() had returned: its log line is the marker that the counter has it.
      await waitUntil(() => errorLines.some((line) => line.includes(ids[0])), `the give-up of ${ids[0]} is logged`);

      const text = await scrape();
      const outboxLabels = { outbox_table: 'outbox', outbox_transport: 'default' };
      expect(sample(text, 'outbox_manual_required_total', outboxLabels)).toBe(1);
      expect(sample(text, 'outbox_parked_keys', outboxLabels)).toBe(1);
      // The unit in the name, as Prometheus names a duration: the installed exporter does not add it.
      for (const name of ['outbox_publish_to_sent_duration_seconds', 'messaging_client_operation_duration_seconds'])
        expect(sample(text, `${name}_count`, { outbox_transport: 'default' })).toBeGreaterThan(0);
      expect(sample(text, 'outbox_lag_seconds', outboxLabels)).toBeGreaterThanOrEqual(0);
      expect(text).not.toMatch(/_duration_bucket|_seconds_seconds|^outbox_lag\{/m);

      // One line names the message given up on, apart from retries: id, type, transport, reason.
      const giveUps = errorLines.filter((line) => line.includes(ids[0]));
      expect(giveUps).toHaveLength(1);
      expect(giveUps[0]).toMatch(
        /Gave up on message .* \(type ledger\.posted, transport default, attempt 1 of \d+; MANUAL_REQUIRED.*\): .*ledger refused the entry/,
      );
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );
});
