import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResult, ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import { MeterProvider, PeriodicExportingMetricReader, PushMetricExporter, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/** How often the registered SDK collects and exports metrics, unless told otherwise. */
const METRIC_EXPORT_INTERVAL_MS = 10_000;

/** What the discarding exporters were handed, so that a caller can tell the SDK was at work. */
export interface OpenTelemetryExports {
  /** Metric collections exported (one per interval, and one at shutdown). */
  metricExports: number;
  /** Spans handed to the span exporter; spans the batch processor dropped (its queue full) are not counted. */
  spans: number;
}

/** An OpenTelemetry SDK registered through the API's globals, until `unregister()`. */
export interface RegisteredOpenTelemetrySdk {
  readonly exports: OpenTelemetryExports;
  /** Shuts the providers down (a last export) and clears the API's globals, so that the next app starts without an SDK. */
  unregister(): Promise<void>;
}

/** What to register; everything unless told otherwise. */
export interface OpenTelemetrySdkOptions {
  /** A meter provider (default true). */
  metrics?: boolean;
  /** A tracer provider, with the context manager and propagator that traces need (default true). */
  traces?: boolean;
  metricExportIntervalMs?: number;
}

/**
 * Registers an SDK as an application would before creating its Nest app: a meter provider with a
 * periodic reader, a tracer provider with a batch span processor, an AsyncLocalStorage context
 * manager and W3C trace-context propagation. Both exporters discard what they get (they count
 * it), so that what is measured is the library's recording and the SDK's work, not a network.
 * Register before the app is created: the library takes its meter at start-up.
 */
export function registerOpenTelemetrySdk(options: OpenTelemetrySdkOptions = {}): RegisteredOpenTelemetrySdk {
  const exports: OpenTelemetryExports = { metricExports: 0, spans: 0 };
  const meterProvider =
    options.metrics === false
      ? undefined
      : new MeterProvider({
          readers: [
            new PeriodicExportingMetricReader({
              exporter: new DiscardingMetricExporter(exports),
              exportIntervalMillis: options.metricExportIntervalMs ?? METRIC_EXPORT_INTERVAL_MS,
            }),
          ],
        });
  const tracerProvider =
    options.traces === false ? undefined : new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(new DiscardingSpanExporter(exports))] });
  const registered = [
    ...(tracerProvider
      ? [
          context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable()),
          propagation.setGlobalPropagator(new W3CTraceContextPropagator()),
          trace.setGlobalTracerProvider(tracerProvider),
        ]
      : []),
    ...(meterProvider ? [metrics.setGlobalMeterProvider(meterProvider)] : []),
  ];
  // The API keeps the first of each global: a second SDK would silently measure the first one.
  if (registered.includes(false)) throw new Error('registerOpenTelemetrySdk: an OpenTelemetry SDK is already registered; unregister it first');
  return {
    exports,
    async unregister() {
      await Promise.all([meterProvider?.shutdown(), tracerProvider?.shutdown()]);
      metrics.disable();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

class DiscardingMetricExporter implements PushMetricExporter {
  constructor(private readonly exports: OpenTelemetryExports) {}

  export(_metrics: ResourceMetrics, resultCallback: (result: ExportResult) => void): void {
    this.exports.metricExports++;
    resultCallback({ code: ExportResultCode.SUCCESS });
  }

  async forceFlush(): Promise<void> {}

  async shutdown(): Promise<void> {}
}

class DiscardingSpanExporter implements SpanExporter {
  constructor(private readonly exports: OpenTelemetryExports) {}

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    this.exports.spans += spans.length;
    resultCallback({ code: ExportResultCode.SUCCESS });
  }

  async shutdown(): Promise<void> {}
}
