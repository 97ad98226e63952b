import { Inject } from '@nestjs/common';
import { getOutboxAdminToken, getOutboxServiceToken } from './outbox-tokens';

/**
 * Injects the `OutboxService` of the outbox `name` (`OutboxModule.forRoot({ name })`); without a
 * name, or with `'default'`, the default outbox's, as a plain `OutboxService` parameter would.
 *
 * ```ts
 * constructor(@InjectOutbox('billing') private readonly billingOutbox: OutboxService) {}
 * ```
 */
export function InjectOutbox(name?: string): PropertyDecorator & ParameterDecorator {
  return Inject(getOutboxServiceToken(name));
}

/** Injects the `OutboxAdmin` of the outbox `name`; without a name, or with `'default'`, the default outbox's. */
export function InjectOutboxAdmin(name?: string): PropertyDecorator & ParameterDecorator {
  return Inject(getOutboxAdminToken(name));
}
