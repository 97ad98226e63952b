import { INestApplicationContext } from '@nestjs/common';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { AMQP_URL } from '../support/environment';
import { InboxFixtureConfig, inboxFixtureProviders } from '../support/inbox-fixture';
import { QueueProbe } from '../support/queue-probe';
import { createTestApp, OrderPayments } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_outbox_tracing');
const PREFIX = brokerName('it.tracing');

const config: InboxFixtureConfig = {
  exchange: `${PREFIX}.orders`,
  routingKey: 'order.paid',
  outExchange: `${PREFIX}.inventory`,
  deadLetterExchange: `${PREFIX}.dlx`,
  consumers: [{ name: 'inventory', queue: `${PREFIX}.inventory` }],
  maxAttempts: 3,
};

describe('Trace propagation', () => {
  const exporter = new InMemorySpanExporter();
  let app: INestApplicationContext;
  let broker: BrokerConnection;
  let outgoing: QueueProbe;

  beforeAll(async () => {
    // An SDK as an application registers it: a context manager for async code, W3C propagation.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
    await database.reset();
    broker = await BrokerConnection.open();
    await broker.prepareInboxes([config]);
    outgoing = await QueueProbe.bind(config.outExchange, '#', `${PREFIX}.out-probe`);
    app = await createTestApp({ database, outbox: { pollIntervalMs: 50 }, providers: inboxFixtureProviders(config) });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    await outgoing?.close();
    await broker?.close();
    trace.disable();
    propagation.disable();
    context.disable();
  });

  it(
    'follows one trace from a request through publish, send, the consumer’s handler and its own publishes',
    async () => {
      const tracer = trace.getTracer('test');
      // The HTTP server's span, as its instrumentation would start it around the request.
      const request = tracer.startSpan('POST /orders/:id/pay', { kind: SpanKind.SERVER });
      const { order, messageId } = await context.with(trace.setSpan(context.active(), request), () => app.get(OrderPayments).pay(config.exchange));
      request.end();

      // The handler publishes inventory.reserved and inventory.notified; both arrive.
      await outgoing.waitFor(2);
      await waitUntil(() => exporter.getFinishedSpans().filter((span) => span.name.startsWith('send')).length === 3, 'three send spans ended');
      const spans = exporter.getFinishedSpans();
      const byName = (name: string) => spans.filter((span) => span.name === name);
      const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

      const [send] = byName(`send ${config.exchange}`);
      const [processing] = byName('process inventory');
      const sendsOut = byName(`send ${config.outExchange}`);
      expect([send, processing].every(Boolean)).toBe(true);
      expect(sendsOut).toHaveLength(2);

      // One trace, each hop the child of the one before.
      const traceId = request.spanContext().traceId;
      for (const span of [send, processing, ...sendsOut]) expect(span.spanContext().traceId).toBe(traceId);
      expect(parentOf(send)).toBe(request.spanContext().spanId);
      expect(parentOf(processing)).toBe(send.spanContext().spanId);
      for (const span of sendsOut) expect(parentOf(span)).toBe(processing.spanContext().spanId);

      expect(send.kind).toBe(SpanKind.PRODUCER);
      // What the OpenTelemetry messaging conventions require of a send span, and the server it went to.
      const broker = new URL(AMQP_URL);
      expect(send.attributes).toMatchObject({
        'messaging.system': 'rabbitmq',
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'send',
        'messaging.destination.name': config.exchange,
        'messaging.rabbitmq.destination.routing_key': config.routingKey,
        'messaging.message.id': messageId,
        'server.address': broker.hostname,
        'server.port': Number(broker.port || 5672),
        'outbox.transport': 'default',
        'outbox.attempt': 1,
      });
      expect(processing.kind).toBe(SpanKind.CONSUMER);
      expect(processing.attributes).toMatchObject({
        'messaging.system': 'rabbitmq',
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'process',
        'messaging.destination.name': config.exchange,
        'messaging.rabbitmq.destination.routing_key': config.routingKey,
        'messaging.message.id': messageId,
        'messaging.consumer.group.name': 'inventory',
      });

      // The consumer's messages carry the trace on: a third service would continue it.
      for (const message of outgoing.messages) {
        expect(String(message.properties.headers?.traceparent)).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
      }
      expect(order.id).toBeGreaterThan(0);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it('stores no trace context for a message published outside any span', async () => {
    const { messageId } = await app.get(OrderPayments).pay(config.exchange);
    const [row] = await database.sql(`SELECT headers FROM {outbox_message} WHERE message_id = ?`, [messageId]);
    expect(JSON.parse(typeof row.headers === 'string' ? row.headers : JSON.stringify(row.headers))).toEqual({});
  });
});
