import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { Attributes, BatchObservableResult, Counter, Histogram, Meter, ObservableGauge, ObservableResult } from '@opentelemetry/api';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { OutboxAdmin } from '../admin/outbox-admin.service';
import { OUTBOX_OPTIONS, OUTBOX_TRANSPORTS } from '../naming/injection-tokens';
import { InboxConsumers } from '../inbox/inbox-consumers';
import { OutboxTransports } from '../transport/outbox-transports';
import type { OutboxTransport } from '../message/outbox-transport';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { describeError } from '../retry/error-classifier';
import { CONSUMER, METRIC_NAMES, OUTBOX_NAME, TABLE, TRANSPORT } from '../observability/metric-names';
import { Instruments } from '../observability/metric-instruments';
import { TableGauges } from './table-gauges';
import { openTelemetryIfInstalled } from '../observability/opentelemetry';
import { OUTBOX_EVENTS, OutboxEventMap, OutboxEventName, OutboxEventScope } from '../observability/outbox-events';
import { OutboxIdentity } from '../naming/outbox-identity';
import { OUTBOX_ADMIN } from '../naming/injection-tokens';

/** The meter's name. */
export const METER_NAME = 'nestjs-outbox';
/** Bucket bounds in seconds, from a millisecond to a minute (the SDK's default bounds are made for milliseconds). */
const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Records the library's events (`OUTBOX_EVENTS`) as OpenTelemetry metrics, through the global
 * meter provider of `@opentelemetry/api` (an optional peer: without it, or without an SDK's
 * provider registered at start-up, nothing is subscribed or recorded).
 * Counters and histograms follow the events; the rows by status and the lag of each table, per
 * transport and per inbox consumer, are read from `OutboxAdmin.stats()` when the SDK collects,
 * which scans each table once per collection. Durations are in seconds, as the messaging
 * semantic conventions use them.
 */
@Injectable()
export class OutboxMetrics implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(this.identity.logContext(OutboxMetrics.name));
  private readonly subscriptions: [string, (message: unknown) => void][] = [];
  private meter?: Meter;
  private collectStats?: (result: BatchObservableResult) => Promise<void>;
  private observables: ObservableGauge[] = [];
  private instruments?: Instruments;
  private observeTransports?: (result: ObservableResult) => void;
  /** Laid over every recorded attribute set: a named outbox's name, nothing for the default outbox. */
  private readonly outboxAttributes: Attributes = this.identity.name === undefined ? {} : { [OUTBOX_NAME]: this.identity.name };

  constructor(
    @Inject(OUTBOX_ADMIN) private readonly admin: OutboxAdmin,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    private readonly identity: OutboxIdentity,
    @Inject(OUTBOX_TRANSPORTS) private readonly transports: OutboxTransports,
    private readonly consumers: InboxConsumers,
  ) {}

  onModuleInit(): void {
    const api = openTelemetryIfInstalled();
    if (!api) return;
    const meter = api.metrics.getMeter(METER_NAME);
    // No SDK registered: the API's meter records nothing, so the events need not be built at all.
    if (meter === api.createNoopMeter()) return;
    this.meter = meter;
    const instruments = this.createInstruments(this.meter);
    this.instruments = instruments;
    this.listen(instruments);
    this.observeTransports = (result) => {
      for (const lane of this.transports.lanes()) result.observe(isUp(lane.transport) ? 1 : 0, { [TRANSPORT]: lane.name, ...this.outboxAttributes });
    };
    instruments.transportUp.addCallback(this.observeTransports);
    if (!this.options.tableMetrics) return;
    const gauges = new TableGauges(instruments, this.admin, this.transports, this.consumers, this.outboxAttributes, this.logger);
    this.collectStats = (result) => gauges.observe(result);
    this.observables = [instruments.rows, instruments.lag, instruments.parkedKeys];
    this.meter.addBatchObservableCallback(this.collectStats, this.observables);
  }

  /**
   * Exports every counter at 0 for each transport and consumer, once the consumers are known (the
   * explorers name them at module init): a series that first appears at 1 has no earlier sample, so
   * `increase()` and `rate()` would miss the first give-up after a restart.
   */
  onApplicationBootstrap(): void {
    const m = this.instruments;
    if (!m) return;
    for (const transport of this.transports.names()) {
      const attributes = { [TRANSPORT]: transport };
      m.published.add(0, attributes);
      m.sent.add(0, attributes);
      m.retries.add(0, { [TABLE]: 'outbox', ...attributes });
      m.manualRequired.add(0, { [TABLE]: 'outbox', ...attributes });
    }
    for (const consumer of this.consumers.all) {
      const attributes = { [CONSUMER]: consumer };
      m.received.add(0, attributes);
      m.duplicates.add(0, attributes);
      m.handled.add(0, attributes);
      m.retries.add(0, { [TABLE]: 'inbox', ...attributes });
      m.manualRequired.add(0, { [TABLE]: 'inbox', ...attributes });
    }
    for (const table of ['outbox', 'inbox']) {
      m.abandoned.add(0, { [TABLE]: table });
      m.claimsLost.add(0, { [TABLE]: table });
    }
  }

  onModuleDestroy(): void {
    for (const [name, listener] of this.subscriptions.splice(0)) unsubscribe(name, listener);
    if (this.meter && this.collectStats) this.meter.removeBatchObservableCallback(this.collectStats, this.observables);
    if (this.instruments && this.observeTransports) this.instruments.transportUp.removeCallback(this.observeTransports);
  }

  private createInstruments(meter: Meter): Instruments {
    const counter = (name: string, description: string) => counterWith(meter.createCounter(name, { description, unit: '{message}' }), this.outboxAttributes);
    const seconds = (name: string, description: string) =>
      histogramWith(meter.createHistogram(name, { description, unit: 's', advice: { explicitBucketBoundaries: SECONDS_BUCKETS } }), this.outboxAttributes);
    const n = METRIC_NAMES;
    return {
      published: counter(n.published, 'Outbox messages stored by publish() (counted in the publishing transaction, which may still roll back)'),
      sent: counter(n.sent, 'Outbox messages a transport took responsibility for'),
      retries: counter(n.retries, 'Failed attempts scheduled for a retry (outbox sends and inbox handlers)'),
      manualRequired: counter(n.manualRequired, 'Messages and deliveries given up on (MANUAL_REQUIRED)'),
      abandoned: counter(n.abandoned, 'Messages abandoned before being sent or processed'),
      claimsLost: counter(n.claimsLost, 'Claims found taken over when settled'),
      received: counter(n.received, 'Deliveries and webhooks that reached an inbox consumer'),
      duplicates: counter(n.duplicates, 'Deliveries skipped as already stored or processed'),
      handled: counter(n.handled, 'Inbox handlers whose effects committed'),
      publishToSent: seconds(n.publishToSent, "From an outbox message's insert (database clock) to its transport's acknowledgement"),
      sendDuration: seconds(n.sendDuration, "One send by an outbox transport (messaging.operation.type 'send'), whatever its outcome"),
      processDuration: seconds(n.processDuration, "An inbox handler with its transaction (messaging.operation.type 'process')"),
      rows: meter.createObservableGauge(n.rows, { description: 'Rows of the outbox and inbox tables by status', unit: '{message}' }),
      lag: meter.createObservableGauge(n.lag, { description: 'How long the oldest due row has waited past its time', unit: 's' }),
      parkedKeys: meter.createObservableGauge(n.parkedKeys, {
        description: 'Ordering keys held back by a MANUAL_REQUIRED head message, which an operator requeues or abandons',
        unit: '{key}',
      }),
      transportUp: meter.createObservableGauge(n.transportUp, {
        description: "1 while a transport can send (a broker connected, an endpoint's circuit closed), 0 while its lane claims nothing",
      }),
    };
  }

  /** Subscribes one recorder per event; a recorder never throws (an error would end the process). */
  private listen(m: Instruments): void {
    const scope = (event: { transport?: string; consumer?: string }): Attributes =>
      event.consumer !== undefined ? { [CONSUMER]: event.consumer } : { [TRANSPORT]: event.transport ?? '' };
    const SEND = { 'messaging.operation.type': 'send', 'messaging.operation.name': 'send' };
    const PROCESS = { 'messaging.operation.type': 'process', 'messaging.operation.name': 'process' };
    // The hot events' attribute sets, built once per transport or consumer rather than per message.
    const ofTransport = memoized((transport: string): Attributes => ({ [TRANSPORT]: transport }));
    const ofSend = memoized((transport: string): Attributes => ({ [TRANSPORT]: transport, ...SEND }));
    const ofConsumer = memoized((consumer: string): Attributes => ({ [CONSUMER]: consumer }));
    const ofProcess = memoized((consumer: string): Attributes => ({ [CONSUMER]: consumer, ...PROCESS }));
    this.on(OUTBOX_EVENTS.published, (e) => m.published.add(1, ofTransport(e.transport)));
    this.on(OUTBOX_EVENTS.sent, (e) => {
      const attributes = ofTransport(e.transport);
      m.sent.add(1, attributes);
      m.publishToSent.record(e.publishToSentMs / 1_000, attributes);
      m.sendDuration.record(e.sendMs / 1_000, ofSend(e.transport));
    });
    // A failed send's duration is recorded with its error.type, as the conventions ask.
    const failedSend = (e: { sendMs?: number; transport?: string; errorType: string }) => {
      if (e.sendMs !== undefined) m.sendDuration.record(e.sendMs / 1_000, { [TRANSPORT]: e.transport ?? '', ...SEND, 'error.type': e.errorType });
    };
    this.on(OUTBOX_EVENTS.retryScheduled, (e) => {
      m.retries.add(1, { [TABLE]: e.table, ...scope(e) });
      failedSend(e);
    });
    this.on(OUTBOX_EVENTS.manualRequired, (e) => {
      m.manualRequired.add(1, { [TABLE]: e.table, ...scope(e) });
      failedSend(e);
    });
    this.on(OUTBOX_EVENTS.abandoned, (e) => m.abandoned.add(e.count, { [TABLE]: e.table }));
    this.on(OUTBOX_EVENTS.claimLost, (e) => m.claimsLost.add(e.count, { [TABLE]: e.table }));
    this.on(OUTBOX_EVENTS.received, (e) => m.received.add(1, ofConsumer(e.consumer)));
    this.on(OUTBOX_EVENTS.duplicate, (e) => m.duplicates.add(1, ofConsumer(e.consumer)));
    this.on(OUTBOX_EVENTS.handled, (e) => {
      m.handled.add(1, ofConsumer(e.consumer));
      m.processDuration.record(e.handlerMs / 1_000, ofProcess(e.consumer));
    });
  }

  private on<N extends OutboxEventName>(name: N, record: (event: OutboxEventMap[N]) => void): void {
    const outbox = this.identity.name;
    const listener = (message: unknown) => {
      // The channels are the process's: each outbox's metrics record only its own events.
      if ((message as OutboxEventScope).outbox !== outbox) return;
      try {
        record(message as OutboxEventMap[N]);
      } catch (error) {
        this.logger.warn(`Recording ${name} failed: ${describeError(error, 300)}`);
      }
    };
    subscribe(name, listener);
    this.subscriptions.push([name, listener]);
  }
}

/**
 * `build` remembered per key. Keys are transport and consumer names, a handful per application
 * (they are the metrics' own cardinality), so the map stays as small as the exported series.
 */
function memoized(build: (key: string) => Attributes): (key: string) => Attributes {
  const built = new Map<string, Attributes>();
  return (key) => {
    let attributes = built.get(key);
    if (!attributes) built.set(key, (attributes = build(key)));
    return attributes;
  };
}

/** Whether a transport could send now, as its lane judges it (a transport without `isAvailable` always can). */
function isUp(transport: OutboxTransport): boolean {
  try {
    return transport.isAvailable?.() ?? true;
  } catch {
    return false;
  }
}

/** `counter`, recording `extra` with every value. */
function counterWith(counter: Counter, extra: Attributes): Counter {
  if (Object.keys(extra).length === 0) return counter;
  return { add: (value, attributes, context) => counter.add(value, { ...attributes, ...extra }, context) };
}

/** `histogram`, recording `extra` with every value. */
function histogramWith(histogram: Histogram, extra: Attributes): Histogram {
  if (Object.keys(extra).length === 0) return histogram;
  return { record: (value, attributes, context) => histogram.record(value, { ...attributes, ...extra }, context) };
}
