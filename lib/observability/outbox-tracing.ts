import type { Context, Span, Tracer } from '@opentelemetry/api';
import { openTelemetryIfInstalled } from './opentelemetry';

/** The tracer's name; spans carry the attributes of the messaging semantic conventions. */
export const TRACER_NAME = 'nestjs-outbox';

/** The W3C trace-context fields the library stores with a message and passes on. */
const TRACE_FIELDS = ['traceparent', 'tracestate'];

/** A string map the propagators read and write, as message headers. */
type Carrier = Record<string, unknown>;

const getter = {
  keys: (carrier: Carrier) => Object.keys(carrier),
  get: (carrier: Carrier, key: string) => {
    // Header names arrive in any case (HTTP lower-cases them; AMQP keeps what was sent).
    const value = carrier[key] ?? carrier[Object.keys(carrier).find((name) => name.toLowerCase() === key) ?? ''];
    return typeof value === 'string' ? value : Array.isArray(value) && typeof value[0] === 'string' ? value[0] : undefined;
  },
};

const setter = { set: (carrier: Carrier, key: string, value: string) => (carrier[key] = value) };

/**
 * The active trace context as headers (`traceparent`, `tracestate`, as the application's
 * propagator writes them), for `publish()` to store with the message; empty when no span is
 * active or `@opentelemetry/api` is not installed.
 */
export function activeTraceHeaders(): Record<string, string> {
  const api = openTelemetryIfInstalled();
  if (!api) return NO_TRACE;
  const active = api.context.active();
  // Nothing to propagate without a valid span in the context: spare every publish the carrier.
  if (!api.trace.getSpanContext(active)) return NO_TRACE;
  const carrier: Carrier = {};
  api.propagation.inject(active, carrier, setter);
  const trace: Record<string, string> = {};
  for (const field of TRACE_FIELDS) {
    const value = carrier[field];
    if (typeof value === 'string') trace[field] = value;
  }
  return trace;
}

const NO_TRACE: Record<string, string> = Object.freeze({});

/** What a traced operation needs: its span (recording), and the context that holds it. */
export interface TracedOperation {
  span: Span;
  context: Context;
}

/**
 * Whether a span started now could record: an SDK's tracer provider is registered. False without
 * `@opentelemetry/api` or without an SDK, where a caller can skip building a span's name and
 * attributes per message. The global provider is the API's proxy, delegating once an SDK registers.
 */
export function spansMayRecord(): boolean {
  const api = openTelemetryIfInstalled();
  if (!api) return false;
  const provider = api.trace.getTracerProvider();
  return !(provider instanceof api.ProxyTracerProvider) || provider.getDelegateTracer(TRACER_NAME) !== undefined;
}

/**
 * Starts a span continuing the trace whose context `headers` carry (a stored message's, a
 * delivery's), or none when nothing records spans (no SDK): then the caller runs untraced, at
 * the cost of this call.
 */
export function startSpanFrom(
  headers: Carrier,
  name: string,
  kind: 'producer' | 'consumer',
  attributes: Record<string, string | number>,
): TracedOperation | undefined {
  const api = openTelemetryIfInstalled();
  if (!api || !spansMayRecord()) return undefined;
  const tracer: Tracer = api.trace.getTracer(TRACER_NAME);
  const parent = api.propagation.extract(api.ROOT_CONTEXT, headers, getter);
  const span = tracer.startSpan(name, { kind: kind === 'producer' ? api.SpanKind.PRODUCER : api.SpanKind.CONSUMER, attributes }, parent);
  if (!span.isRecording()) {
    span.end();
    return undefined;
  }
  return { span, context: api.trace.setSpan(parent, span) };
}

/** `headers` with the trace context of `operation` in place of theirs: what the next hop continues. */
export function withTraceContext(headers: Record<string, unknown>, operation: TracedOperation): Record<string, unknown> {
  const api = openTelemetryIfInstalled()!;
  const carrier: Carrier = { ...headers };
  for (const field of TRACE_FIELDS) delete carrier[field];
  api.propagation.inject(operation.context, carrier, setter);
  return carrier;
}

/** Runs `work` with `operation`'s span active, so that what it publishes continues the trace. */
export function runInSpan<T>(operation: TracedOperation, work: () => T): T {
  return openTelemetryIfInstalled()!.context.with(operation.context, work);
}

/** Ends the span, with the error's status when the operation failed. */
export function endSpan(operation: TracedOperation, error?: unknown): void {
  const api = openTelemetryIfInstalled()!;
  if (error !== undefined) {
    operation.span.recordException(error instanceof Error ? error : String(error));
    operation.span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
    operation.span.setAttribute('error.type', (error as { constructor?: { name?: string } })?.constructor?.name ?? 'Error');
  }
  operation.span.end();
}
