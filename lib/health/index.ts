/**
 * `nestjs-outbox/health`: the outbox's health indicator for `@nestjs/terminus`.
 *
 * @module nestjs-outbox/health
 */

export { OutboxHealthIndicator } from './outbox-health.indicator';
export type { OutboxHealthOptions } from './outbox-health.indicator';
export type { OutboxHealthFigures, OutboxHealthThresholds } from './health-problems';
