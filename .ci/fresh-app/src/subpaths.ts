// The subpaths, type-checked under each build's module resolution (node10 reads typesVersions).
import { OutboxAdmin } from 'nestjs-outbox/admin';
import type { OutboxStats } from 'nestjs-outbox/admin';
import { OutboxHealthIndicator } from 'nestjs-outbox/health';
import type { OutboxHealthOptions } from 'nestjs-outbox/health';
import { CapturingOutboxTransport } from 'nestjs-outbox/testing';
import { HttpOutboxTransport } from 'nestjs-outbox/transports';
import type { OutboxTransport } from 'nestjs-outbox/transports';
import { StandardWebhooksGuard } from 'nestjs-outbox/webhooks';

export const subpaths = [OutboxAdmin, OutboxHealthIndicator, CapturingOutboxTransport, HttpOutboxTransport, StandardWebhooksGuard];
export const healthOptions: OutboxHealthOptions = {};
export type Figures = OutboxStats;
export type Transport = OutboxTransport;
