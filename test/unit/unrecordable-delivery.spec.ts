import type { ConsumeMessage } from 'amqplib';
import { reducedForms } from '../../lib/inbox/unrecordable-delivery';
import { inboxRow } from '../support/dialect-rows';

const message = {
  content: Buffer.from('{"seq":0}'),
  fields: { exchange: 'ledger', routingKey: 'entry.acct-1' },
  properties: { messageId: 'm-1', type: 'ledger.entry', headers: {} },
} as unknown as ConsumeMessage;

describe('reducedForms', () => {
  it('keeps the ordering key in every form the database may take, and drops it only in a last one that says so', () => {
    const forms = reducedForms(inboxRow({ orderingKey: 'acct-1', payload: '{"seq":0}' }), message);

    expect(forms.map((form) => [form.row.orderingKey, form.row.payload])).toEqual([
      ['acct-1', '{"seq":0}'],
      ['acct-1', ''],
      [null, ''],
    ]);
    expect(forms[2].note).toContain('without its ordering key "acct-1", which could not be stored either: later messages of that key are not held back');
    // One row of its own, whichever form is stored.
    expect(new Set(forms.map((form) => form.row.messageId)).size).toBe(1);
    expect(forms[0].row.messageId).toMatch(/^unrecordable:/);
  });

  it('has no keyless form for a delivery without an ordering key', () => {
    const forms = reducedForms(inboxRow({ orderingKey: null }), message);
    expect(forms.map((form) => form.row.orderingKey)).toEqual([null, null]);
  });
});
