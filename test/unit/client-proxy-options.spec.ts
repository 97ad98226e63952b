import { OutboxOptionsError } from '../../lib/errors';
import { validateOutboxOptions } from '../../lib/options/validate-options';
import { transportOptionProblems } from '../../lib/options/transport-lanes';
import { ClientProxyOutboxTransport } from '../../lib/transport/client-proxy/client-proxy-outbox.transport';
import { clientProxyTransportOptionProblems, resolveClientProxyTimeout } from '../../lib/transport/client-proxy/client-proxy-options';

describe('ClientProxyOutboxTransport options', () => {
  it('takes a string, symbol or class token and a positive timeout', () => {
    class EventsClient {}
    for (const client of ['EVENTS', Symbol('events'), EventsClient]) expect(clientProxyTransportOptionProblems({ client, timeoutMs: 1 })).toEqual([]);
  });

  it('names each option at fault', () => {
    expect(clientProxyTransportOptionProblems({ client: '' })).toEqual([expect.stringMatching(/^client must be the injection token/)]);
    expect(clientProxyTransportOptionProblems({ client: 42 as never, timeoutMs: 0 })).toEqual([
      expect.stringMatching(/^client/),
      expect.stringMatching(/^timeoutMs must be a positive integer/),
    ]);
    expect(clientProxyTransportOptionProblems({ client: 'EVENTS', timeoutMs: 1.5 })).toEqual([expect.stringMatching(/^timeoutMs/)]);
    expect(clientProxyTransportOptionProblems(undefined as never)).toEqual([expect.stringMatching(/^options must be an object/)]);
  });

  it('fails in for(), where the module is declared', () => {
    expect(() => ClientProxyOutboxTransport.for({ client: '' })).toThrow(OutboxOptionsError);
    expect(() => ClientProxyOutboxTransport.for({ client: '' })).toThrow(/ClientProxyOutboxTransport client/);
  });

  it('defaults the timeout to 5 s, or half of sendTimeoutMs where that is less', () => {
    expect(resolveClientProxyTimeout(undefined, 10_000)).toEqual({ timeoutMs: 5_000, problems: [] });
    expect(resolveClientProxyTimeout(undefined, 3_000)).toEqual({ timeoutMs: 1_500, problems: [] });
    expect(resolveClientProxyTimeout(250, 3_000)).toEqual({ timeoutMs: 250, problems: [] });
  });

  it('refuses a timeout not below sendTimeoutMs, through the module-level check', () => {
    const transport = ClientProxyOutboxTransport.for({ client: 'EVENTS', timeoutMs: 10_000 });
    expect(transportOptionProblems(transport, validateOutboxOptions({ sendTimeoutMs: 10_000 }))).toEqual([
      'ClientProxyOutboxTransport timeoutMs (10000) must be less than sendTimeoutMs (10000)',
    ]);
    expect(transportOptionProblems(transport, validateOutboxOptions({ sendTimeoutMs: 10_001 }))).toEqual([]);
  });
});
