import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'yaml';
import { prometheusSampleNames } from '../../lib/observability/metric-names';

const DOCS = resolve(__dirname, '../../docs');

/**
 * The metric names a PromQL expression reads: its identifiers of the library's families
 * (`outbox_…`, `messaging_…`), once label matchers (`{…}`) and groupings (`by (…)`) are taken out,
 * since those name labels.
 */
function metricsIn(expr: string): string[] {
  const withoutLabels = expr
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    // Grafana's label_values(metric, label): the label is not a metric.
    .replace(/label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,[^)]*\)/g, '$1');
  return [...withoutLabels.matchAll(/\b(?:outbox|messaging)_[a-z0-9_]+\b/g)].map((match) => match[0]);
}

/** Every `expr` and `query` string anywhere in a parsed document. */
function expressions(node: unknown): string[] {
  if (Array.isArray(node)) return node.flatMap(expressions);
  if (!node || typeof node !== 'object') return [];
  return Object.entries(node).flatMap(([key, value]) => ((key === 'expr' || key === 'query') && typeof value === 'string' ? [value] : expressions(value)));
}

describe('What operators are shipped reads only metrics the library exports', () => {
  const exported = new Set(prometheusSampleNames());

  it('names durations and the lag with their unit', () => {
    for (const name of [
      'outbox_publish_to_sent_duration_seconds_bucket',
      'messaging_client_operation_duration_seconds_bucket',
      'messaging_process_duration_seconds_count',
      'outbox_lag_seconds',
    ])
      expect(exported.has(name)).toBe(true);
  });

  it.each([
    ['the alert rules', 'alerts/outbox-rules.yml'],
    ['the alert rules’ tests', 'alerts/outbox-rules.test.yml'],
    ['the Grafana dashboard', 'grafana-dashboard.json'],
  ])('%s', (_, file) => {
    const text = readFileSync(resolve(DOCS, file), 'utf8');
    const document = file.endsWith('.json') ? JSON.parse(text) : parse(text);
    const named = expressions(document).flatMap(metricsIn);
    // The test files' series are `series:` strings, not expressions.
    const series = file.endsWith('.test.yml') ? [...text.matchAll(/series: '([a-z0-9_]+)\{/g)].map((match) => match[1]) : [];
    expect(named.length + series.length).toBeGreaterThan(0);
    expect([...named, ...series].filter((name) => !exported.has(name))).toEqual([]);
  });

  it('has an alert for each signal operators asked for', () => {
    const rules = parse(readFileSync(resolve(DOCS, 'alerts/outbox-rules.yml'), 'utf8')).groups.flatMap((group: { rules: object[] }) => group.rules);
    const byMetric = (metric: string) => rules.filter((rule: { expr: string }) => metricsIn(rule.expr).includes(metric)).length;
    for (const metric of ['outbox_manual_required_total', 'outbox_lag_seconds', 'outbox_transport_up', 'outbox_parked_keys'])
      expect(byMetric(metric)).toBeGreaterThan(0);
  });
});
