import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { InboxDialect } from '../dialects/inbox-dialect';
import { OutboxDialect } from '../dialects/outbox-dialect';
import { MessageChange, MessageRef, StateTable } from '../engine/state-table';
import { ListedMessage, MessageDetail, OutboxMessageQuery, OutboxMessageState, ParkedKey } from '../engine/message-views';
import { changedStatuses } from '../dialects/message-change-sql';
import { OutboxError } from '../errors';
import { InboxWakeup } from '../inbox/inbox-wakeup';
import { unstorableReason } from '../inbox/storable-text';
import { columnText, shortStringText } from '../message/message-text';
import { INBOX_DIALECT, OUTBOX_DATA_SOURCE, OUTBOX_DIALECT } from '../naming/injection-tokens';
import { OutboxWakeup } from '../outbox/outbox-wakeup';
import { OUTBOX_EVENTS } from '../observability/outbox-events';
import { inboxStats, OutboxActivity, OutboxStats, outboxStats } from './outbox-stats';
import { changeInBatches } from './batched-change';
import { filterForChange, wakesWorker } from './change-scope';
import {
  BatchOptions,
  InboxMessageFilter,
  ListedInboxMessage,
  ListedOutboxMessage,
  MessagePage,
  MessagePageOptions,
  OutboxMessageFilter,
} from './message-filter';
import { checkedFilter, FilteredTable } from './message-filter-validation';
import { checkedBatchSize, checkedWindow } from './page-options';
import { OutboxIdentity } from '../naming/outbox-identity';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DEFAULT_LIMIT = 100;

/**
 * Operator actions on messages that need a human: counts rows by status, lists ordering keys
 * parked behind a MANUAL_REQUIRED head, requeues or abandons one message (which releases its
 * key, in order), and lists, requeues, abandons, replays or purges the messages a filter selects
 * (in bounded batches). Each statement is short and re-checks the statuses it may change, so every
 * action is safe to run from any instance while dispatchers run.
 */
@Injectable()
export class OutboxAdmin {
  /**
   * Nest creates it: inject it rather than constructing it.
   * @internal
   */
  constructor(
    @Inject(OUTBOX_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(OUTBOX_DIALECT) private readonly outbox: OutboxDialect,
    @Inject(INBOX_DIALECT) private readonly inbox: InboxDialect,
    private readonly outboxWakeup: OutboxWakeup,
    private readonly inboxWakeup: InboxWakeup,
    private readonly identity: OutboxIdentity,
  ) {}

  /**
   * Rows per status, due rows, the oldest due time and the lag behind it, and rows in flight, for
   * the outbox and the inbox (in total and per consumer). One aggregate statement per table; every
   * time is the database's. It counts every row, so its cost grows with the finished history that
   * retention keeps.
   */
  async stats(): Promise<OutboxStats> {
    const outbox = await this.outbox.statusSummary(this.dataSource);
    const inbox = await this.inbox.statusSummary(this.dataSource);
    return { outbox: outboxStats(outbox), inbox: inboxStats(inbox), at: outbox.at };
  }

  /** Where an outbox message stands (by id, or by business key and type); null when there is none. */
  async findMessage(query: OutboxMessageQuery): Promise<OutboxMessageState | null> {
    const normalised =
      'messageId' in query
        ? { messageId: outboxMessageId(query.messageId) }
        : { bizKey: columnText('bizKey', query.bizKey), type: shortStringText('type', query.type, false) };
    return this.outbox.findMessage(this.dataSource, normalised);
  }

  /** Outbox ordering keys whose first unsent message is MANUAL_REQUIRED, with its error. */
  parkedKeys(limit = DEFAULT_LIMIT): Promise<ParkedKey[]> {
    return this.outbox.findParkedKeys(this.dataSource, limit);
  }

  /** Deferred-inbox ordering keys (per consumer) whose first unprocessed delivery is MANUAL_REQUIRED. */
  parkedInboxKeys(limit = DEFAULT_LIMIT): Promise<ParkedKey[]> {
    return this.inbox.findParkedKeys(this.dataSource, limit);
  }

  /**
   * Sends a FAILED or MANUAL_REQUIRED outbox message again, with a fresh attempt budget.
   * @returns false when no such message is in one of those states
   */
  async requeue(messageId: string): Promise<boolean> {
    const requeued = await this.outbox.requeue(this.dataSource, { messageId: outboxMessageId(messageId) });
    if (requeued) this.outboxWakeup.wake();
    return requeued;
  }

  /**
   * Gives up on an unsent (PENDING, FAILED or MANUAL_REQUIRED) outbox message: it becomes
   * ABANDONED and is never sent; later messages of its ordering key go on.
   * @returns false when no such message is in one of those states
   */
  async abandon(messageId: string): Promise<boolean> {
    const abandoned = await this.outbox.abandon(this.dataSource, { messageId: outboxMessageId(messageId) });
    if (abandoned) {
      this.outboxWakeup.wake();
      this.identity.emit(OUTBOX_EVENTS.abandoned, () => ({ table: 'outbox', count: 1 }));
    }
    return abandoned;
  }

  /** Processes a FAILED or MANUAL_REQUIRED deferred inbox delivery again, with a fresh attempt budget. */
  async requeueInbox(consumer: string, messageId: string): Promise<boolean> {
    const requeued = await this.inbox.requeue(this.dataSource, inboxMessageRef(consumer, messageId));
    if (requeued) this.inboxWakeup.wake();
    return requeued;
  }

  /** Gives up on an unprocessed inbox delivery: it becomes ABANDONED and its handler never runs. */
  async abandonInbox(consumer: string, messageId: string): Promise<boolean> {
    const abandoned = await this.inbox.abandon(this.dataSource, inboxMessageRef(consumer, messageId));
    if (abandoned) {
      this.inboxWakeup.wake();
      this.identity.emit(OUTBOX_EVENTS.abandoned, () => ({ table: 'inbox', count: 1 }));
    }
    return abandoned;
  }

  /** Outbox messages matching `filter` (every field optional), one page of them: newest first unless `page.order` says otherwise. */
  async listMessages(filter: OutboxMessageFilter = {}, page?: MessagePageOptions): Promise<MessagePage<ListedOutboxMessage>> {
    return (await this.list('outbox', filter, page)) as MessagePage<ListedOutboxMessage>;
  }

  /** Inbox deliveries matching `filter`, one page of them, as `listMessages`. */
  async listInboxMessages(filter: InboxMessageFilter = {}, page?: MessagePageOptions): Promise<MessagePage<ListedInboxMessage>> {
    return (await this.list('inbox', filter, page)) as MessagePage<ListedInboxMessage>;
  }

  /**
   * `requeue()` for every FAILED or MANUAL_REQUIRED outbox message matching `filter`: due now, with
   * a fresh attempt budget. Refuses an empty filter.
   * @returns how many messages were requeued
   */
  requeueMessages(filter: OutboxMessageFilter, options?: BatchOptions): Promise<number> {
    return this.change('outbox', 'requeue', 'requeueMessages', filter, options);
  }

  /** `abandon()` for every PENDING, FAILED or MANUAL_REQUIRED outbox message matching `filter`. Refuses an empty filter. */
  abandonMessages(filter: OutboxMessageFilter, options?: BatchOptions): Promise<number> {
    return this.change('outbox', 'abandon', 'abandonMessages', filter, options);
  }

  /**
   * Sends DONE outbox messages matching `filter` again, under their own message ids: each becomes
   * PENDING, due now, with no attempts. A message with an ordering key stays DONE while a later
   * message of its key is still to be sent or in flight; one replayed goes out in its key's order
   * before the key's later messages still to come, and after those already sent that the filter
   * does not select. Refuses an empty filter.
   * @returns how many messages will be sent again
   */
  replayMessages(filter: OutboxMessageFilter, options?: BatchOptions): Promise<number> {
    return this.change('outbox', 'replay', 'replayMessages', filter, options);
  }

  /**
   * Deletes outbox messages matching `filter` that are DONE or ABANDONED, or MANUAL_REQUIRED when
   * the filter's status names it; never one still to be sent. Needs a status or a time bound.
   * @returns how many rows were deleted
   */
  purgeMessages(filter: OutboxMessageFilter, options?: BatchOptions): Promise<number> {
    return this.change('outbox', 'purge', 'purgeMessages', filter, options);
  }

  /** `requeueInbox()` for every FAILED or MANUAL_REQUIRED inbox delivery matching `filter`. Refuses an empty filter. */
  requeueInboxMessages(filter: InboxMessageFilter, options?: BatchOptions): Promise<number> {
    return this.change('inbox', 'requeue', 'requeueInboxMessages', filter, options);
  }

  /** `abandonInbox()` for every PENDING, FAILED or MANUAL_REQUIRED inbox delivery matching `filter`. Refuses an empty filter. */
  abandonInboxMessages(filter: InboxMessageFilter, options?: BatchOptions): Promise<number> {
    return this.change('inbox', 'abandon', 'abandonInboxMessages', filter, options);
  }

  /** Deletes inbox deliveries matching `filter`, as `purgeMessages`. A redelivery of a deleted one runs its handler again. */
  purgeInboxMessages(filter: InboxMessageFilter, options?: BatchOptions): Promise<number> {
    return this.change('inbox', 'purge', 'purgeInboxMessages', filter, options);
  }

  /** An outbox message whole (payload, headers, destination, claim), or null when there is none. */
  readMessage(messageId: string): Promise<MessageDetail | null> {
    return this.outbox.readMessage(this.dataSource, { messageId: outboxMessageId(messageId) });
  }

  /** An inbox delivery whole, or null when there is none. */
  readInboxMessage(consumer: string, messageId: string): Promise<MessageDetail | null> {
    return this.inbox.readMessage(this.dataSource, inboxMessageRef(consumer, messageId));
  }

  /**
   * How many outbox messages `change` (`requeueMessages`, `abandonMessages`, `replayMessages` or
   * `purgeMessages`) would reach now, for an operator to confirm it: the rows `filter` selects in
   * the statuses the change touches. It refuses what the change refuses. Rows move meanwhile, and a
   * replay leaves some DONE (see `replayMessages`), so the change may then reach fewer.
   */
  countChange(change: MessageChange, filter: OutboxMessageFilter): Promise<number> {
    return this.countFor('outbox', change, filter);
  }

  /** `countChange` for the inbox's `requeueInboxMessages`, `abandonInboxMessages` and `purgeInboxMessages`. */
  countInboxChange(change: Exclude<MessageChange, 'replay'>, filter: InboxMessageFilter): Promise<number> {
    return this.countFor('inbox', change, filter);
  }

  /**
   * Messages sent (outbox) or processed (inbox), and messages written, in each of `slices` equal
   * slices of the last `windowMs` (default: twelve 5-minute slices of the last hour), oldest first,
   * counted by the database from the rows, so every instance sees the same figures. One aggregate
   * statement per table, over the rows written or finished in the window.
   */
  async recentActivity(windowMs = 3_600_000, slices = 12): Promise<OutboxActivity> {
    if (!Number.isInteger(windowMs) || windowMs < 1000 || !Number.isInteger(slices) || slices < 1 || slices > 120) {
      throw new OutboxError(`recentActivity() takes a window of at least 1000 ms and 1 to 120 slices, got ${windowMs} ms and ${slices}`);
    }
    const outbox = await this.outbox.recentActivity(this.dataSource, windowMs, slices);
    const inbox = await this.inbox.recentActivity(this.dataSource, windowMs, slices);
    return { outbox, inbox };
  }

  private countFor(table: FilteredTable, change: MessageChange, filter: unknown): Promise<number> {
    const operation = `${change}${table === 'inbox' ? 'Inbox' : ''}Messages`;
    const scoped = filterForChange(change, checkedFilter(table, filter), operation);
    return this.tableOf(table).countMessages(this.dataSource, { ...scoped, statuses: changedStatuses(change, scoped.statuses) });
  }

  private async list(table: FilteredTable, filter: unknown, page: MessagePageOptions | undefined): Promise<MessagePage<ListedMessage>> {
    const checked = checkedFilter(table, filter);
    const window = checkedWindow(page);
    // One row more than the page tells whether another page follows.
    const rows = await this.tableOf(table).listMessages(this.dataSource, checked, { ...window, limit: window.limit + 1 });
    const messages = rows.slice(0, window.limit);
    return { messages, next: rows.length > window.limit ? messages[messages.length - 1].id : null };
  }

  private async change(table: FilteredTable, change: MessageChange, operation: string, filter: unknown, options: BatchOptions | undefined): Promise<number> {
    const scoped = filterForChange(change, checkedFilter(table, filter), operation);
    const batchSize = checkedBatchSize(options);
    const wakeup = table === 'outbox' ? this.outboxWakeup : this.inboxWakeup;
    const wake = wakesWorker(change, scoped) ? () => wakeup.wake() : () => undefined;
    const changed = await changeInBatches(this.dataSource, this.tableOf(table), change, scoped, batchSize, wake);
    if (change === 'abandon' && changed > 0) this.identity.emit(OUTBOX_EVENTS.abandoned, () => ({ table, count: changed }));
    return changed;
  }

  private tableOf(table: FilteredTable): StateTable {
    return table === 'outbox' ? this.outbox : this.inbox;
  }
}

function outboxMessageId(messageId: string): string {
  if (typeof messageId !== 'string' || !UUID.test(messageId)) throw new OutboxError(`messageId must be a UUID, got ${JSON.stringify(messageId)}`);
  return messageId.toLowerCase();
}

/**
 * An inbox row's key as an operator gives it. Text the inbox cannot store is no row's key: such a
 * delivery was recorded under a `rejected:` or `unrecordable:` id, which its `last_error` quotes.
 */
function inboxMessageRef(consumer: string, messageId: string): MessageRef {
  for (const [name, value] of [
    ['consumer', consumer],
    ['messageId', messageId],
  ] as const) {
    if (typeof value !== 'string' || value.length === 0) throw new OutboxError(`${name} must be a non-empty string, got ${JSON.stringify(value)}`);
    const reason = unstorableReason(value);
    if (reason) {
      throw new OutboxError(
        `${name} ${reason}, so no inbox row has it: such a delivery was recorded under a rejected: or unrecordable: id, which its last_error quotes`,
      );
    }
  }
  return { consumer, messageId };
}
