import { NonRetryableError } from '../errors/outbox.error';

/** What to do with a message whose attempt failed. */
export type FailureVerdict = 'retry' | 'fatal';

const MAX_CAUSE_DEPTH = 16;

/**
 * Decides retry or fatal for a failed attempt by walking the error's `cause` chain:
 * a `NonRetryableError`, or any error the user's predicate marks fatal, anywhere on the chain
 * makes it fatal. Everything else (connection, timeout, channel errors and unknown errors)
 * retries, bounded by the attempt limit.
 */
export function classifyFailure(error: unknown, isFatal?: (error: unknown) => boolean): FailureVerdict {
  for (const link of causeChain(error)) {
    if (link instanceof NonRetryableError) return 'fatal';
    if (isFatal?.(link)) return 'fatal';
  }
  return 'retry';
}

/** The error followed by its causes (and an AggregateError's members), without cycles. */
export function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length > 0 && chain.length < MAX_CAUSE_DEPTH) {
    const current = queue.shift();
    if (current === undefined || current === null || seen.has(current)) continue;
    seen.add(current);
    chain.push(current);
    if (current instanceof AggregateError) queue.push(...current.errors);
    if (typeof current === 'object' && 'cause' in current) queue.push(current.cause);
  }
  return chain;
}

/** One link of a cause chain as text; what was thrown may have none (`Object.create(null)`, a throwing getter). */
function describeLink(link: unknown): string {
  try {
    return link instanceof Error ? `${link.name}: ${link.message}` : String(link);
  } catch {
    return `a thrown ${typeof link} without text`;
  }
}

/** A one-line description of an error and its causes, cut to `maxLength` characters. */
export function describeError(error: unknown, maxLength: number): string {
  const text = causeChain(error).map(describeLink).join(' <- caused by ');
  return text.length <= maxLength ? text : `${text.slice(0, maxLength - 1)}…`;
}
