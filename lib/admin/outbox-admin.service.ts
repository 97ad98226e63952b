import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { InboxDialect } from '../dialects/inbox-dialect';
import { OutboxDialect, OutboxMessageQuery, OutboxMessageState } from '../dialects/outbox-dialect';
import { MessageRef, ParkedKey } from '../engine/state-table';
import { OutboxError } from '../errors';
import { InboxWakeup } from '../inbox/inbox-wakeup';
import { unstorableReason } from '../inbox/storable-text';
import { columnText, shortStringText } from '../message/message-text';
import { INBOX_DIALECT, OUTBOX_DATA_SOURCE, OUTBOX_DIALECT } from '../outbox.constants';
import { OutboxWakeup } from '../outbox/outbox-wakeup';
import { inboxStats, OutboxStats, outboxStats } from './outbox-stats';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DEFAULT_LIMIT = 100;

/**
 * Operator actions on messages that need a human: counts rows by status, lists ordering keys
 * parked behind a MANUAL_REQUIRED head, and requeues or abandons one message (which releases its
 * key, in order). Each action is one statement per table, safe to run from any instance.
 */
@Injectable()
export class OutboxAdmin {
  constructor(
    @Inject(OUTBOX_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(OUTBOX_DIALECT) private readonly outbox: OutboxDialect,
    @Inject(INBOX_DIALECT) private readonly inbox: InboxDialect,
    private readonly outboxWakeup: OutboxWakeup,
    private readonly inboxWakeup: InboxWakeup,
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
    if (abandoned) this.outboxWakeup.wake();
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
    if (abandoned) this.inboxWakeup.wake();
    return abandoned;
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
  for (const [name, value] of [['consumer', consumer], ['messageId', messageId]] as const) {
    if (typeof value !== 'string' || value.length === 0) throw new OutboxError(`${name} must be a non-empty string, got ${JSON.stringify(value)}`);
    const reason = unstorableReason(value);
    if (reason) {
      throw new OutboxError(`${name} ${reason}, so no inbox row has it: such a delivery was recorded under a rejected: or unrecordable: id, which its last_error quotes`);
    }
  }
  return { consumer, messageId };
}
