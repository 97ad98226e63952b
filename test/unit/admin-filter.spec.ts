import { filterForChange } from '../../lib/admin/change-scope';
import { checkedFilter } from '../../lib/admin/message-filter-validation';
import { checkedBatchSize, checkedWindow } from '../../lib/admin/page-options';
import { changedStatuses } from '../../lib/dialects/message-change-sql';
import { likeContaining } from '../../lib/dialects/message-filter-sql';
import { MessageStatus } from '../../lib';
import { OutboxAdminFilterError } from '../../lib/entries/admin';

const { PENDING, PROCESSING, DONE, FAILED, MANUAL_REQUIRED, ABANDONED } = MessageStatus;

/** The error `run` throws, which must be an OutboxAdminFilterError. */
function refusal(run: () => unknown): OutboxAdminFilterError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(OutboxAdminFilterError);
    return error as OutboxAdminFilterError;
  }
  throw new Error('expected a refusal');
}

describe('checkedFilter()', () => {
  it('takes every field of an outbox filter as given, a single status as a list', () => {
    const createdAfter = new Date('2024-01-01T00:00:00Z');
    const createdBefore = new Date('2024-01-02T00:00:00Z');
    expect(
      checkedFilter('outbox', {
        status: FAILED,
        type: 'order.paid',
        bizKey: 'order-1',
        transport: 'partner',
        errorContains: '50%',
        createdAfter,
        createdBefore,
      }),
    ).toEqual({ statuses: [FAILED], type: 'order.paid', bizKey: 'order-1', transport: 'partner', errorContains: '50%', createdAfter, createdBefore });
  });

  it('takes several statuses, once each', () => {
    expect(checkedFilter('outbox', { status: [FAILED, MANUAL_REQUIRED, FAILED] })).toEqual({ statuses: [FAILED, MANUAL_REQUIRED] });
  });

  it('leaves out fields that are undefined', () => {
    expect(checkedFilter('inbox', { type: undefined, consumer: 'Billing.handle' })).toEqual({ consumer: 'Billing.handle' });
  });

  it('accepts an empty type in the inbox, where deliveries without an AMQP type are stored under it', () => {
    expect(checkedFilter('inbox', { type: '' })).toEqual({ type: '' });
    expect(refusal(() => checkedFilter('outbox', { type: '' })).field).toBe('type');
  });

  it.each([
    ['not an object', 'outbox', 'FAILED', undefined],
    ['null', 'outbox', null, undefined],
    ['an array', 'outbox', [FAILED], undefined],
    ['a misspelt field', 'outbox', { stauts: FAILED }, 'stauts'],
    ['the inbox field on the outbox', 'outbox', { consumer: 'x' }, 'consumer'],
    ['the outbox field on the inbox', 'inbox', { transport: 'default' }, 'transport'],
    ['an unknown status', 'outbox', { status: 'SENT' }, 'status'],
    ['a status in the wrong case', 'outbox', { status: 'failed' }, 'status'],
    ['an empty status list', 'outbox', { status: [] }, 'status'],
    ['a list with a non-status', 'outbox', { status: [FAILED, 1] }, 'status'],
    ['a type that is not a string', 'outbox', { type: 42 }, 'type'],
    ['a type longer than an AMQP short string', 'outbox', { type: 'é'.repeat(128) }, 'type'],
    ['a type with NUL', 'outbox', { type: 'a\u0000b' }, 'type'],
    ['a business key of null', 'outbox', { bizKey: null }, 'bizKey'],
    ['an empty business key', 'outbox', { bizKey: '' }, 'bizKey'],
    ['a business key longer than its column', 'outbox', { bizKey: 'k'.repeat(256) }, 'bizKey'],
    ['a business key with a lone surrogate', 'outbox', { bizKey: 'a\ud800' }, 'bizKey'],
    ['a transport name with a space', 'outbox', { transport: 'my lane' }, 'transport'],
    ['a transport name longer than its column', 'outbox', { transport: 't'.repeat(101) }, 'transport'],
    ['an empty consumer', 'inbox', { consumer: '' }, 'consumer'],
    ['a consumer longer than its column', 'inbox', { consumer: 'c'.repeat(201) }, 'consumer'],
    ['an empty errorContains', 'outbox', { errorContains: '' }, 'errorContains'],
    ['an errorContains longer than any last error', 'outbox', { errorContains: 'e'.repeat(10_001) }, 'errorContains'],
    ['a time given as text', 'outbox', { createdAfter: '2024-01-01' }, 'createdAfter'],
    ['a time given as a number', 'outbox', { createdBefore: Date.now() }, 'createdBefore'],
    ['an invalid Date', 'outbox', { createdBefore: new Date('nonsense') }, 'createdBefore'],
    ['a Date past year 9999', 'outbox', { createdBefore: new Date(Date.UTC(10_000, 0, 1)) }, 'createdBefore'],
    ['an empty time range', 'outbox', { createdAfter: new Date(1_000), createdBefore: new Date(1_000) }, 'createdAfter'],
    ['a reversed time range', 'outbox', { createdAfter: new Date(2_000), createdBefore: new Date(1_000) }, 'createdAfter'],
  ] as const)('refuses %s, naming the field', (_, table, input, field) => {
    const error = refusal(() => checkedFilter(table, input));
    expect(error.field).toBe(field);
    expect(error.message).toMatch(/^Invalid OutboxAdmin filter: /);
  });

  it('says what a filter has when it refuses a field it does not know', () => {
    expect(refusal(() => checkedFilter('outbox', { consumer: 'x' })).message).toContain('it filters the inbox');
    expect(refusal(() => checkedFilter('inbox', { stauts: FAILED })).message).toContain('consumer');
  });

  it('quotes no long text back', () => {
    expect(refusal(() => checkedFilter('outbox', { bizKey: 'k'.repeat(300) })).message).not.toContain('k'.repeat(50));
  });
});

describe('filterForChange()', () => {
  it.each(['requeue', 'abandon', 'replay', 'purge'] as const)('refuses an empty filter for %s', (change) => {
    const error = refusal(() => filterForChange(change, {}, `${change}Messages`));
    expect(error.message).toContain(`${change}Messages() refuses an empty filter`);
  });

  it('refuses a purge with neither a status nor a time bound', () => {
    expect(refusal(() => filterForChange('purge', { type: 'order.paid' }, 'purgeMessages')).field).toBe('status');
  });

  it('purges finished rows only, unless the filter names MANUAL_REQUIRED', () => {
    const createdBefore = new Date(1_000);
    expect(filterForChange('purge', { createdBefore }, 'purgeMessages')).toEqual({ createdBefore, statuses: [DONE, ABANDONED] });
    expect(filterForChange('purge', { statuses: [MANUAL_REQUIRED] }, 'purgeMessages')).toEqual({ statuses: [MANUAL_REQUIRED] });
  });

  it('refuses a status filter naming nothing the change touches', () => {
    expect(refusal(() => filterForChange('requeue', { statuses: [DONE, PROCESSING] }, 'requeueMessages')).field).toBe('status');
    expect(refusal(() => filterForChange('abandon', { statuses: [DONE] }, 'abandonMessages')).field).toBe('status');
    expect(refusal(() => filterForChange('replay', { statuses: [FAILED] }, 'replayMessages')).field).toBe('status');
    expect(refusal(() => filterForChange('purge', { statuses: [PENDING, PROCESSING, FAILED] }, 'purgeMessages')).field).toBe('status');
  });

  it('keeps a filter that names at least one status the change touches', () => {
    expect(filterForChange('requeue', { statuses: [FAILED, DONE] }, 'requeueMessages')).toEqual({ statuses: [FAILED, DONE] });
  });
});

describe('changedStatuses()', () => {
  it('narrows each change to its own statuses, never widening it', () => {
    expect(changedStatuses('requeue', undefined)).toEqual([FAILED, MANUAL_REQUIRED]);
    expect(changedStatuses('requeue', [FAILED, DONE, PROCESSING])).toEqual([FAILED]);
    expect(changedStatuses('abandon', [PROCESSING, DONE, ABANDONED])).toEqual([]);
    expect(changedStatuses('replay', [DONE, PENDING])).toEqual([DONE]);
    expect(changedStatuses('purge', Object.values(MessageStatus))).toEqual([DONE, ABANDONED, MANUAL_REQUIRED]);
  });

  it('never touches a PROCESSING row', () => {
    for (const change of ['requeue', 'abandon', 'replay', 'purge'] as const) {
      expect(changedStatuses(change, [PROCESSING])).toEqual([]);
      expect(changedStatuses(change, undefined)).not.toContain(PROCESSING);
    }
  });
});

describe('likeContaining()', () => {
  it('escapes the wildcards and the escape character', () => {
    expect(likeContaining('100%')).toBe('%100!%%');
    expect(likeContaining('a_b')).toBe('%a!_b%');
    expect(likeContaining('x!y')).toBe('%x!!y%');
    expect(likeContaining('back\\slash')).toBe('%back\\slash%');
  });
});

describe('checkedWindow()', () => {
  it('defaults to the newest 100 rows', () => {
    expect(checkedWindow(undefined)).toEqual({ after: null, limit: 100, newestFirst: true });
    expect(checkedWindow({ after: '42', limit: 1_000, order: 'oldest' })).toEqual({ after: '42', limit: 1_000, newestFirst: false });
  });

  it.each([
    [{ limit: 0 }, 'limit'],
    [{ limit: 1_001 }, 'limit'],
    [{ limit: 2.5 }, 'limit'],
    [{ limit: '10' }, 'limit'],
    [{ after: 42 }, 'after'],
    [{ after: '-1' }, 'after'],
    [{ after: '0' }, 'after'],
    [{ after: '9223372036854775808' }, 'after'],
    [{ after: '1e3' }, 'after'],
    [{ order: 'desc' }, 'order'],
    [{ offset: 10 }, 'offset'],
  ])('refuses %p', (page, field) => {
    expect(refusal(() => checkedWindow(page as never)).field).toBe(field);
  });
});

describe('checkedBatchSize()', () => {
  it('defaults to 500 rows per statement', () => {
    expect(checkedBatchSize(undefined)).toBe(500);
    expect(checkedBatchSize({ batchSize: 1 })).toBe(1);
  });

  it.each([0, 5_001, 1.5, '10', null])('refuses a batch size of %p', (batchSize) => {
    expect(refusal(() => checkedBatchSize({ batchSize } as never)).field).toBe('batchSize');
  });
});
