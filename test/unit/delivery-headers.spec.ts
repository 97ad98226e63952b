import { ATTEMPT_HEADER, headersToSend, PUBLISHED_AT_HEADER } from '../../lib/transport/delivery-headers';

describe('headersToSend', () => {
  const createdAt = new Date('2026-12-06T09:00:00.123Z');

  it('puts the delivery headers over the message’s own when they are on', () => {
    expect(headersToSend({ attempts: 2, createdAt, headers: { tenant: 'acme', [ATTEMPT_HEADER]: 'forged' } }, true)).toEqual({
      tenant: 'acme',
      [ATTEMPT_HEADER]: 3,
      [PUBLISHED_AT_HEADER]: '2026-12-06T09:00:00.123Z',
    });
    expect(headersToSend({ attempts: 0, createdAt, headers: {} }, true)).toEqual({ [ATTEMPT_HEADER]: 1, [PUBLISHED_AT_HEADER]: '2026-12-06T09:00:00.123Z' });
  });

  it('gives the message’s own headers alone when they are off, and nothing when it has none', () => {
    const own = { tenant: 'acme' };
    expect(headersToSend({ attempts: 0, createdAt, headers: own }, false)).toEqual({ tenant: 'acme' });
    expect(headersToSend({ attempts: 0, createdAt, headers: {} }, false)).toBeUndefined();
  });
});
