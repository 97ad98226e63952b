/**
 * The names of the library's metrics, as instruments are named. Durations end in their unit
 * (`_seconds`): Prometheus exporters that do not add the unit themselves (the JavaScript one does
 * not) expose them as `…_seconds`, and those that follow the OpenTelemetry → Prometheus rules see
 * the unit already in the name and add nothing.
 */
export const METRIC_NAMES = {
  published: 'outbox.messages.published',
  sent: 'outbox.messages.sent',
  retries: 'outbox.retries',
  manualRequired: 'outbox.manual_required',
  abandoned: 'outbox.abandoned',
  claimsLost: 'outbox.claims_lost',
  received: 'outbox.inbox.received',
  duplicates: 'outbox.inbox.duplicates',
  handled: 'outbox.inbox.handled',
  publishToSent: 'outbox.publish_to_sent.duration_seconds',
  sendDuration: 'messaging.client.operation.duration_seconds',
  processDuration: 'messaging.process.duration_seconds',
  rows: 'outbox.rows',
  lag: 'outbox.lag_seconds',
  parkedKeys: 'outbox.parked_keys',
  transportUp: 'outbox.transport.up',
} as const;

/** What each metric is, which decides the names Prometheus shows it under. */
const METRIC_KINDS: Record<keyof typeof METRIC_NAMES, 'counter' | 'histogram' | 'gauge'> = {
  published: 'counter',
  sent: 'counter',
  retries: 'counter',
  manualRequired: 'counter',
  abandoned: 'counter',
  claimsLost: 'counter',
  received: 'counter',
  duplicates: 'counter',
  handled: 'counter',
  publishToSent: 'histogram',
  sendDuration: 'histogram',
  processDuration: 'histogram',
  rows: 'gauge',
  lag: 'gauge',
  parkedKeys: 'gauge',
  transportUp: 'gauge',
};

/**
 * The sample names a Prometheus scrape shows of the library's metrics (`.` becomes `_`, counters
 * end in `_total`, histograms have `_bucket`, `_sum` and `_count`): what alert rules and
 * dashboards may name.
 */
export function prometheusSampleNames(): string[] {
  return Object.entries(METRIC_NAMES).flatMap(([key, name]) => {
    const base = name.replace(/\./g, '_');
    const kind = METRIC_KINDS[key as keyof typeof METRIC_NAMES];
    return kind === 'counter' ? [`${base}_total`] : kind === 'histogram' ? ['_bucket', '_sum', '_count'].map((suffix) => base + suffix) : [base];
  });
}

/** The attribute keys of the library's metrics. */
export const TABLE = 'outbox.table';
export const TRANSPORT = 'outbox.transport';
export const CONSUMER = 'messaging.consumer.group.name';
export const STATUS = 'outbox.status';
/** Set only on a named outbox's metrics: the default outbox's keep the attributes they always had. */
export const OUTBOX_NAME = 'outbox.name';
