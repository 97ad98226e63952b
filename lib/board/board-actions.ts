import { InboxMessageFilter, OutboxMessageFilter } from '../admin/message-filter';
import { OutboxAdmin } from '../admin/outbox-admin.service';
import { CHANGEABLE_STATUSES } from '../engine/state-table';
import { MessageDetail } from '../engine/message-views';
import { OutboxError } from '../errors';
import { boardFilter, describeFilter } from './board-filter';
import { CSRF_FIELD } from './csrf';
import { BoardFields, fieldOf } from './board-request';

/** An action of the board: the admin's four changes. */
export type BoardAction = 'requeue' | 'abandon' | 'replay' | 'purge';

const ACTIONS: readonly BoardAction[] = ['requeue', 'abandon', 'replay', 'purge'];

/** One message (by id) or every message a filter selects, in the outbox or the inbox. */
export type ActionTarget =
  | { kind: 'message'; inbox: boolean; messageId: string; consumer: string; fields: Record<string, string> }
  | { kind: 'filter'; inbox: boolean; filter: ReturnType<typeof boardFilter> };

/** The action a form or link names, refused when it is none of the board's. */
export function actionOf(fields: BoardFields): BoardAction {
  const action = fieldOf(fields, 'action');
  if (!ACTIONS.includes(action as BoardAction)) throw new OutboxError(`action must be one of ${ACTIONS.join(', ')}, got ${JSON.stringify(action ?? '')}`);
  return action as BoardAction;
}

/**
 * What an action applies to: the message its `id` (and `consumer`, in the inbox) names, or else
 * the filter of its fields. By id the board offers what `OutboxAdmin` does by id: requeue and
 * abandon; replay and purge go by filter.
 */
export function targetOf(fields: BoardFields, action: BoardAction): ActionTarget {
  const inbox = fieldOf(fields, 'inbox') === '1';
  const messageId = fieldOf(fields, 'id');
  if (messageId === undefined) {
    if (inbox && action === 'replay') throw new OutboxError('replay sends outbox messages again; the inbox has no replay');
    return { kind: 'filter', inbox, filter: boardFilter(fields, ['action', CSRF_FIELD]) };
  }
  if (action !== 'requeue' && action !== 'abandon')
    throw new OutboxError(`${action} applies to a filter, not to one message: list the messages and use the filter's ${action}`);
  const consumer = fieldOf(fields, 'consumer') ?? '';
  return { kind: 'message', inbox, messageId, consumer, fields: { id: messageId, ...(inbox ? { inbox: '1', consumer } : {}) } };
}

/** The target in words, for the confirmation. */
export function describeTarget(target: ActionTarget): string {
  if (target.kind === 'message') return `the ${target.inbox ? `inbox of consumer ${target.consumer}` : 'outbox'}: message ${target.messageId}`;
  return `the ${target.inbox ? 'inbox' : 'outbox'} matching ${describeFilter(target.filter)}`;
}

/** How many messages the action would change now: the admin's count, with its refusals (an empty filter among them). */
export async function countAction(admin: OutboxAdmin, action: BoardAction, target: ActionTarget): Promise<number> {
  if (target.kind === 'message') {
    const message = await readTarget(admin, target);
    return message && CHANGEABLE_STATUSES[action].includes(message.status) ? 1 : 0;
  }
  const fields = target.filter.fields;
  if (!target.inbox) return admin.countChange(action, fields);
  return admin.countInboxChange(action as Exclude<BoardAction, 'replay'>, fields);
}

/** Runs the action through `OutboxAdmin`, which re-checks every status and refuses what the CLI refuses; returns how many changed. */
export async function runAction(admin: OutboxAdmin, action: BoardAction, target: ActionTarget): Promise<number> {
  if (target.kind === 'message') {
    const { messageId, consumer } = target;
    const changed =
      action === 'requeue'
        ? target.inbox
          ? await admin.requeueInbox(consumer, messageId)
          : await admin.requeue(messageId)
        : target.inbox
          ? await admin.abandonInbox(consumer, messageId)
          : await admin.abandon(messageId);
    return changed ? 1 : 0;
  }
  const outbox = target.filter.fields as OutboxMessageFilter;
  const inbox = target.filter.fields as InboxMessageFilter;
  switch (action) {
    case 'requeue':
      return target.inbox ? admin.requeueInboxMessages(inbox) : admin.requeueMessages(outbox);
    case 'abandon':
      return target.inbox ? admin.abandonInboxMessages(inbox) : admin.abandonMessages(outbox);
    case 'replay':
      return admin.replayMessages(outbox);
    case 'purge':
      return target.inbox ? admin.purgeInboxMessages(inbox) : admin.purgeMessages(outbox);
  }
}

/** The message a target names, or null when there is none. */
export function readTarget(admin: OutboxAdmin, target: { inbox: boolean; messageId: string; consumer: string }): Promise<MessageDetail | null> {
  return target.inbox ? admin.readInboxMessage(target.consumer, target.messageId) : admin.readMessage(target.messageId);
}
