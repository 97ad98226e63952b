import { randomUUID } from 'node:crypto';
import { InboxRow } from '../../lib/dialects/inbox-dialect';
import { NewOutboxRow } from '../../lib/message/validate-message';

/** What a test message is unless the test says otherwise: the same in both tables. */
const MESSAGE = {
  type: 'test.event',
  bizKey: null,
  orderingKey: null,
  exchange: 'test',
  routingKey: 'test.event',
  payload: '{"n":1}',
  headers: '{}',
  maxAttempts: 5,
};

/** A valid outbox row with a new message id; `overrides` set what the test is about. */
export function outboxRow(overrides: Partial<NewOutboxRow> = {}): NewOutboxRow {
  return { messageId: randomUUID(), ...MESSAGE, transport: 'default', destination: '', delayMs: 0, availableAt: null, ...overrides };
}

/** A valid inbox row with a new message id; `overrides` set what the test is about. */
export function inboxRow(overrides: Partial<InboxRow> = {}): InboxRow {
  return { consumer: 'Consumer.handle', messageId: randomUUID(), ...MESSAGE, ...overrides };
}
