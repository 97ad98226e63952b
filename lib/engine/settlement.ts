import { AttemptedClaim, ClaimRef, FailedSettlement } from './state-table';
import { failedStatus } from './give-up-rule';
import { MessageStatus } from '../message/message-status';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { backoffDelayMs, BackoffPolicy } from '../retry/backoff';
import { causeChain, classifyFailure, describeError } from '../retry/error-classifier';
import { RetryLaterError } from '../errors/outbox.error';
import { TransportUnavailableError } from '../errors/transport.errors';

/** The longest a receiver's `Retry-After` may hold a message back: a day, whatever it asks. */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1_000;

/** How failed attempts are judged and recorded. */
export interface FailurePolicy {
  backoff: BackoffPolicy;
  isFatalError?: (error: unknown) => boolean;
  lastErrorMaxLength: number;
}

/** The failure policy the module's options describe. */
export function failurePolicyFrom(options: OutboxModuleOptions): FailurePolicy {
  return {
    backoff: { baseMs: options.backoffBaseMs, maxMs: options.backoffMaxMs, jitter: options.backoffJitter },
    isFatalError: options.isFatalError,
    lastErrorMaxLength: options.lastErrorMaxLength,
  };
}

/** A batch's outcomes, grouped for one settle statement each. */
export interface BatchSettlement {
  done: ClaimRef[];
  failed: FailedSettlement[];
  /** Not attempted, through no fault of their own (the transport was unavailable): given back as they were. */
  released: ClaimRef[];
}

/**
 * The state transition of a failed attempt: FAILED with a backoff (at least what a
 * `RetryLaterError` on the error's chain asks, up to a day), or MANUAL_REQUIRED when the error is
 * fatal or this was the last allowed attempt.
 */
export function failedSettlement(claim: AttemptedClaim, error: unknown, policy: FailurePolicy): FailedSettlement {
  const failedAttempts = claim.attempts + 1;
  const status = failedStatus(failedAttempts, claim.maxAttempts, classifyFailure(error, policy.isFatalError) === 'fatal');
  return {
    id: claim.id,
    claimToken: claim.claimToken,
    status,
    delayMs: status === MessageStatus.MANUAL_REQUIRED ? 0 : Math.max(backoffDelayMs(failedAttempts, policy.backoff), retryAfterMs(error)),
    error: describeError(error, policy.lastErrorMaxLength),
  };
}

/** Sorts a batch's send results into DONE, failed and released settlements. */
export function settleBatch<T extends AttemptedClaim>(claimed: T[], results: PromiseSettledResult<unknown>[], policy: FailurePolicy): BatchSettlement {
  const settlement: BatchSettlement = { done: [], failed: [], released: [] };
  claimed.forEach((message, index) => {
    const result = results[index];
    const ref = { id: message.id, claimToken: message.claimToken };
    if (result.status === 'fulfilled') settlement.done.push(ref);
    else if (result.reason instanceof TransportUnavailableError) settlement.released.push(ref);
    else settlement.failed.push(failedSettlement(message, result.reason, policy));
  });
  return settlement;
}

/** The wait a `RetryLaterError` on the chain asks for, 0 without one. */
function retryAfterMs(error: unknown): number {
  const retryLater = causeChain(error).find((link): link is RetryLaterError => link instanceof RetryLaterError);
  const asked = retryLater?.retryAfterMs;
  return typeof asked === 'number' && Number.isFinite(asked) && asked > 0 ? Math.min(Math.ceil(asked), MAX_RETRY_AFTER_MS) : 0;
}
