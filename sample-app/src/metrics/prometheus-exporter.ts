import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

/**
 * The OpenTelemetry SDK of this sample: one meter provider, read by a Prometheus exporter that
 * serves no port of its own (`MetricsController` serves its text on the application's port).
 * Registered when this file is first imported, before the application starts: the outbox takes
 * its meter at start-up.
 */
export const prometheusExporter = new PrometheusExporter({ preventServerStart: true });

metrics.setGlobalMeterProvider(new MeterProvider({ readers: [prometheusExporter] }));
