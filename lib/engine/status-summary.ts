import { MessageStatus } from '../message/message-status';

/** One (consumer, status) group of a table, as the database counted it. */
export interface StatusGroup {
  /** The consumer in the inbox; null in the outbox. */
  scope: string | null;
  status: MessageStatus;
  count: number;
  /** PENDING/FAILED rows of the group whose `next_attempt_at` has passed. */
  due: number;
  /** The earliest `next_attempt_at` of those rows; null when none is due. */
  oldestDueAt: Date | null;
}

/** A table's rows counted by status in one statement, with the database's clock at that moment. */
export interface StatusSummary {
  /** The database's clock when the statement ran: lag is measured against it, never the host's. */
  at: Date;
  groups: StatusGroup[];
}
