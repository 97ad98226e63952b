import { exchangesBlamed, isPermanentRefusal } from '../../lib/transport/amqp/channel-close';

describe('channel close attribution', () => {
  it('blames the publications to the exchange a 404 names, and only those', () => {
    const error = { code: 404, message: `Channel closed by server: 404 (NOT-FOUND) with message "NOT_FOUND - no exchange 'orders.typo' in vhost '/'"` };
    expect(exchangesBlamed(error, ['orders', 'orders.typo', 'orders.typ', ''])).toEqual(new Set(['orders.typo']));
  });

  it('blames the exchange named by an access refusal or an internal exchange', () => {
    const refused = { code: 403, message: `ACCESS_REFUSED - access to exchange 'private' in vhost '/' refused for user 'guest'` };
    const internal = { code: 403, message: `ACCESS_REFUSED - cannot publish to internal exchange 'inner' in vhost '/'` };
    expect(exchangesBlamed(refused, ['private', 'public'])).toEqual(new Set(['private']));
    expect(exchangesBlamed(internal, ['inner', 'public'])).toEqual(new Set(['inner']));
  });

  it('blames nobody when the error names no exchange of the channel (every publication is a suspect)', () => {
    const error = { code: 406, message: `PRECONDITION_FAILED - invalid message: {unacceptable_type_in_header,"CC",longstr}` };
    expect(exchangesBlamed(error, ['orders', ''])).toBeUndefined();
    expect(isPermanentRefusal(error)).toBe(true);
    expect(isPermanentRefusal({ code: 404, message: '' })).toBe(false);
  });

  it('does not take an exchange whose name is a prefix of the named one for the culprit', () => {
    const error = { code: 404, message: `NOT_FOUND - no exchange 'a.b' in vhost '/'` };
    expect(exchangesBlamed(error, ['a', 'a.b.c'])).toBeUndefined();
  });
});
