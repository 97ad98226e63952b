// The subpaths, type-checked under each build's module resolution (node10 reads typesVersions).
import { OutboxHealthIndicator } from 'nestjs-outbox/health';
import type { OutboxHealthOptions } from 'nestjs-outbox/health';
import { CapturingOutboxTransport } from 'nestjs-outbox/testing';

export const subpaths = [OutboxHealthIndicator, CapturingOutboxTransport];
export const healthOptions: OutboxHealthOptions = {};
