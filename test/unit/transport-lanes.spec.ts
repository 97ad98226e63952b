import fc from 'fast-check';
import { Injectable } from '@nestjs/common';
import { OutboxMessage, OutboxModule, OutboxOptionsError } from '../../lib';
import { OutboxTransport } from '../../lib/entries/transports';
import { transportOf } from '../../lib/outbox/message-router';
import { defaultTransportName, isTransportName, laneSpecs } from '../../lib/options/transport-lanes';
import { staticOptionProblems } from '../../lib/options/validate-static-options';

@Injectable()
class Sender implements OutboxTransport {
  async send(): Promise<void> {}
}

@Injectable()
class OtherSender implements OutboxTransport {
  async send(): Promise<void> {}
}

const message: OutboxMessage = { type: 'order.paid', payload: {} };

describe('transport names', () => {
  it('fit the varchar(100) column in bytes, whatever is accepted', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 120 }), (name) => {
        if (isTransportName(name)) expect(Buffer.byteLength(name)).toBeLessThanOrEqual(100);
      }),
      { numRuns: 5_000 },
    );
  });

  it.each(['default', 'partner-http', 'eu.nats:orders', 'A_1'])('accepts %s', (name) => expect(isTransportName(name)).toBe(true));
  it.each(['', ' ', '-leading', 'has space', 'tab\t', 'é', 'x'.repeat(101), 'new\nline'])('refuses %j', (name) => expect(isTransportName(name)).toBe(false));
});

describe('transportOf', () => {
  it("takes the message's own transport first, then route(), then the default", () => {
    const route = (m: Readonly<OutboxMessage>) => (m.type === 'order.paid' ? 'routed' : undefined);
    expect(transportOf({ ...message, transport: 'own' }, route, 'default')).toBe('own');
    expect(transportOf(message, route, 'default')).toBe('routed');
    expect(transportOf({ ...message, type: 'other' }, route, 'default')).toBe('default');
    expect(transportOf(message, undefined, 'main')).toBe('main');
  });

  it('refuses what cannot name a transport, from the message or from route()', () => {
    expect(() => transportOf({ ...message, transport: 'a b' }, undefined, 'default')).toThrow(expect.objectContaining({ field: 'transport' }));
    expect(() => transportOf(message, () => 42 as unknown as string, 'default')).toThrow(/route\(\) returned 42, which is not a transport name/);
  });
});

describe('transports option', () => {
  const problems = (statics: Record<string, unknown>) => staticOptionProblems(statics);

  it('accepts classes and lanes with settings', () => {
    expect(
      problems({ transports: { default: Sender, partner: { transport: OtherSender, batchSize: 50, dispatchConcurrency: 2, pollIntervalMs: 200 } } }),
    ).toEqual([]);
    expect(problems({ transports: { only: Sender } })).toEqual([]);
    expect(problems({ transports: { a: Sender, b: Sender }, defaultTransport: 'b' })).toEqual([]);
  });

  it('names every mistake', () => {
    expect(problems({ transport: Sender, transports: { default: Sender } })).toContainEqual(expect.stringMatching(/^transport and transports are both set/));
    expect(problems({ transports: {} })).toContainEqual(expect.stringMatching(/^transports names no transport/));
    expect(problems({ transports: { 'bad name': Sender } })).toContainEqual(expect.stringMatching(/^transports: the name "bad name" is not a transport name/));
    expect(problems({ transports: { a: new Sender() } })).toContainEqual(
      expect.stringMatching(/^transports\.a must be a class .*got an instance of Sender: pass the class itself \(transports\.a: Sender\)/),
    );
    expect(problems({ transports: { a: { transport: Sender, batchSize: 0 } } })).toContainEqual(
      'transports.a.batchSize must be an integer from 1 to 10000, got 0',
    );
    expect(problems({ transports: { a: { transport: Sender, pollInterval: 5 } } })).toContainEqual(
      expect.stringMatching(/^transports\.a\.pollInterval is not a lane setting/),
    );
    expect(problems({ transports: { a: { batchSize: 5 } } })).toContainEqual("transports.a.transport is missing: give the transport's class");
    expect(problems({ transports: { a: Sender, b: Sender }, defaultTransport: 'c' })).toContainEqual('defaultTransport "c" is not one of transports (a, b)');
    expect(problems({ transports: { a: Sender, b: Sender } })).toContainEqual(expect.stringMatching(/none is "default": set defaultTransport/));
    expect(problems({ defaultTransport: 'main' })).toContainEqual(expect.stringMatching(/^defaultTransport "main" names no transport/));
  });

  it('fails where the module is declared', () => {
    expect(() => OutboxModule.forRoot({ transports: { a: Sender, b: Sender }, defaultTransport: 'c' })).toThrow(OutboxOptionsError);
  });

  it('makes one lane per transport, and picks the default', () => {
    const lanes = laneSpecs({ transports: { default: Sender, partner: { transport: OtherSender, batchSize: 5 } } }, () => OtherSender);
    expect(lanes).toEqual([
      { name: 'default', transport: Sender },
      { name: 'partner', transport: OtherSender, batchSize: 5 },
    ]);
    expect(laneSpecs({}, () => OtherSender)).toEqual([{ name: 'default', transport: OtherSender }]);
    expect(defaultTransportName(undefined, lanes)).toBe('default');
    expect(defaultTransportName(undefined, [{ name: 'only', transport: Sender }])).toBe('only');
    expect(defaultTransportName('partner', lanes)).toBe('partner');
  });
});
