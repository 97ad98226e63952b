export { OutboxHealthIndicator } from './outbox-health.indicator';
export type { OutboxHealthOptions } from './outbox-health.indicator';
export type { OutboxHealthFigures, OutboxHealthThresholds } from './health-problems';
