import type { ChannelModel } from 'amqplib';
import { TransportUnavailableError } from '../../lib/entries/transports';
import { ExchangeRegistry } from '../../lib/transport/amqp/exchange-registry';

/** A connection whose channels answer the exchange check as each test says, counting the checks. */
function connection(answer: () => Promise<unknown>): { model: ChannelModel; checks: () => number } {
  let checks = 0;
  const channel = {
    on: () => undefined,
    checkExchange: () => {
      checks += 1;
      return answer();
    },
    close: () => Promise.resolve(),
  };
  return { model: { createChannel: () => Promise.resolve(channel) } as unknown as ChannelModel, checks: () => checks };
}

describe('ExchangeRegistry', () => {
  it('checks an exchange once, and remembers that it exists', async () => {
    const { model, checks } = connection(() => Promise.resolve({}));
    const registry = new ExchangeRegistry(1_000);
    expect(await registry.exists(model, 'orders')).toBe(true);
    expect(await registry.exists(model, 'orders')).toBe(true);
    expect(checks()).toBe(1);
  });

  it('says a missing exchange is missing, and asks again next time', async () => {
    const { model, checks } = connection(() => Promise.reject(Object.assign(new Error('NOT_FOUND'), { code: 404 })));
    const registry = new ExchangeRegistry(1_000);
    expect(await registry.exists(model, 'typo')).toBe(false);
    expect(await registry.exists(model, 'typo')).toBe(false);
    expect(checks()).toBe(2);
  });

  it('gives up on a check the broker leaves unanswered as unavailable, and checks afresh next time', async () => {
    let answers: Array<() => Promise<unknown>> = [
      () => new Promise(() => undefined),
      () => Promise.reject(Object.assign(new Error('NOT_FOUND'), { code: 404 })),
    ];
    const { model, checks } = connection(() => answers.shift()!());
    const registry = new ExchangeRegistry(50);
    await expect(registry.exists(model, 'typo')).rejects.toBeInstanceOf(TransportUnavailableError);
    // Not the hung check again: a new one, which the broker answers.
    expect(await registry.exists(model, 'typo')).toBe(false);
    expect(checks()).toBe(2);
    answers = [];
  });
});
