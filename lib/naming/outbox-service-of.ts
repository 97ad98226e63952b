import type { ModuleRef } from '@nestjs/core';
import { OutboxError } from '../errors';
import { describeOutbox } from './outbox-name';
import type { OutboxToken } from './outbox-name';

/**
 * The service of the outbox `name` for a decorator's interceptor, which Nest creates in the
 * module of the decorated class: the default outbox's as injected there, a named outbox's looked
 * up once by its token (`tokenOf(name)`) and kept in `cache`.
 */
export function outboxServiceOf<T>(
  moduleRef: ModuleRef,
  cache: Map<string, T>,
  name: string | undefined,
  injected: T | undefined,
  tokenOf: (name: string) => OutboxToken<T>,
  where: string,
): T {
  let service = name === undefined ? injected : cache.get(name);
  if (service === undefined && name !== undefined) {
    try {
      service = moduleRef.get<T>(tokenOf(name), { strict: false });
      cache.set(name, service);
    } catch {
      // Not configured: told below.
    }
  }
  if (service === undefined)
    throw new OutboxError(`${where} uses ${describeOutbox(name)}, which this application does not configure; is OutboxModule imported?`);
  return service;
}
