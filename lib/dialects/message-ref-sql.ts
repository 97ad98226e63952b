import { MessageRef } from '../engine/state-table';
import { MessageStatus } from '../message/message-status';

/** The column that scopes message ids and ordering keys: `consumer` in the inbox, none in the outbox. */
export type MessageScope = 'consumer' | null;

/**
 * The status a requeued message gets. PENDING in the outbox. FAILED in the inbox: the one state
 * from which both a deferred worker claims a row and a transactional-mode redelivery takes it over.
 */
export function requeuedStatus(scope: MessageScope): MessageStatus {
  return scope ? MessageStatus.FAILED : MessageStatus.PENDING;
}

/**
 * The filter selecting one message, and its parameters: message ids are unique in the outbox,
 * per consumer in the inbox. `placeholder(n)` spells the n-th parameter (1-based) in the dialect.
 */
export function messageRefFilter(scope: MessageScope, ref: MessageRef, placeholder: (n: number) => string): { sql: string; params: unknown[] } {
  return scope
    ? { sql: `message_id = ${placeholder(1)} AND ${scope} = ${placeholder(2)}`, params: [ref.messageId, ref.consumer ?? ''] }
    : { sql: `message_id = ${placeholder(1)}`, params: [ref.messageId] };
}
