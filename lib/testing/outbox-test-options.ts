import type { OutboxModuleOptionsInput } from '../options/outbox-module-options';

/**
 * Module options for tests that exercise failures: a retry backoff of one millisecond, so a
 * failed send or inbox attempt is due again by the next `flush()` round (and a failed
 * transactional inbox delivery is held back for a millisecond, not seconds). Spread into your own:
 * `OutboxModule.forRoot({ ...OUTBOX_TEST_OPTIONS, maxAttempts: 3, transport: CapturingOutboxTransport })`.
 */
export const OUTBOX_TEST_OPTIONS: Readonly<Pick<OutboxModuleOptionsInput, 'backoffBaseMs' | 'backoffMaxMs' | 'backoffJitter'>> = Object.freeze({
  backoffBaseMs: 1,
  backoffMaxMs: 1,
  backoffJitter: 0,
});
