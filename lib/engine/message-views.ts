import { MessageStatus } from '../message/message-status';

/*
 * What operators read: the messages, parked keys and activity that OutboxAdmin returns (and the
 * board and the command line show). Defined here, below both the dialects that map rows to them
 * and the admin service that returns them, so that neither owns the other's shapes.
 */

/**
 * Where a message stands: what operators and refusals explain.
 * @inline
 */
export interface MessageState {
  /** The message's id. */
  messageId: string;
  /** The message type. */
  type: string;
  /** The business key it was published or received with; null when none. */
  bizKey: string | null;
  /** Its ordering key; null when none. */
  orderingKey: string | null;
  /** Where it stands in the state machine. */
  status: MessageStatus;
  /** Failed attempts so far. */
  attempts: number;
  /** The reason of the last failure or rejection; null when none. */
  lastError: string | null;
  /** When the row was inserted, by the database's clock. */
  createdAt: Date;
  /** When it was sent or processed (DONE) or given up (ABANDONED). */
  processedAt: Date | null;
}

/**
 * A row as an operator sees it.
 * @inline
 */
export interface ListedMessage extends MessageState {
  /** The row's id: pass the last one seen as the next page's `after`. */
  id: string;
  /** When the row is next due (a retry's time, or a delayed message's). */
  nextAttemptAt: Date;
  /** Outbox only. */
  transport?: string;
  /** Outbox only. */
  destination?: string;
  /** Inbox only. */
  consumer?: string;
}

/**
 * A message whole, as an operator inspects it: what a listing shows, with its payload, headers,
 * destination and claim.
 * @inline
 */
export interface MessageDetail extends ListedMessage {
  /** The attempts it may fail before it is given up on. */
  maxAttempts: number;
  /** The exchange it was published to (outbox) or received from (inbox). */
  exchange: string;
  /** Its routing key. */
  routingKey: string;
  /** The payload as stored: JSON text in the outbox, the delivered body in the inbox. */
  payload: string;
  /** The headers as stored (JSON text). */
  headers: string;
  /** Which instance holds its claim; null when none ever did or the claim was cleared. */
  claimedBy: string | null;
  /** When its current or last claim was taken; null when none is held. */
  claimedAt: Date | null;
}

/** Rows finished and created in equal slices of a recent window, by the database's clock. */
export interface RecentActivity {
  /** Rows that became DONE in each slice, oldest slice first. */
  done: number[];
  /** Rows created in each slice, oldest slice first. */
  created: number[];
}

/** An ordering key held back by its first unfinished message, which is MANUAL_REQUIRED. */
export interface ParkedKey {
  /** The parked ordering key. */
  orderingKey: string;
  /** Inbox only: keys are ordered per consumer. */
  consumer: string | null;
  /** Outbox only: the transport that sends the head message. */
  transport: string | null;
  /** The head message, which an operator requeues or abandons to release the key. */
  messageId: string;
  /** The head message's type. */
  type: string;
  /** The head message's counted attempts. */
  attempts: number;
  /** Why the head message was given up on. */
  lastError: string | null;
  /** How many later messages of the key wait behind the head. */
  waiting: number;
}

/** Where an outbox message stands, for operators and for code that explains a refusal. */
export type OutboxMessageState = MessageState;

/** Finds a message by its id, or by its business key and type. */
export type OutboxMessageQuery =
  | {
      /** The message's id. */
      messageId: string;
    }
  | {
      /** The business key it was published with. */
      bizKey: string;
      /** Its type: `(type, bizKey)` is unique. */
      type: string;
    };
