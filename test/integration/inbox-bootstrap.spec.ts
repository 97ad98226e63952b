import { RabbitRPC, RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { Injectable, Scope } from '@nestjs/common';
import { InboxHandler } from '../../lib';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_inbox_bootstrap');
const EXCHANGE = brokerName('it.inbox-bootstrap');

@Injectable()
class WithoutSubscribe {
  @InboxHandler()
  async handle(): Promise<void> {}
}

@Injectable()
class OnRpc {
  @RabbitRPC({ exchange: EXCHANGE, routingKey: 'rpc', queue: `${EXCHANGE}.rpc` })
  @InboxHandler()
  async handle(): Promise<void> {}
}

@Injectable({ scope: Scope.REQUEST })
class RequestScoped {
  @RabbitSubscribe({ exchange: EXCHANGE, routingKey: 'x', queue: `${EXCHANGE}.request` })
  @InboxHandler()
  async handle(): Promise<void> {}
}

@Injectable()
class FirstInventory {
  @RabbitSubscribe({ exchange: EXCHANGE, routingKey: 'a', queue: `${EXCHANGE}.a` })
  @InboxHandler({ consumer: 'inventory' })
  async handle(): Promise<void> {}
}

@Injectable()
class SecondInventory {
  @RabbitSubscribe({ exchange: EXCHANGE, routingKey: 'b', queue: `${EXCHANGE}.b` })
  @InboxHandler({ consumer: 'inventory' })
  async handle(): Promise<void> {}
}

@Injectable()
class LongConsumerName {
  @RabbitSubscribe({ exchange: EXCHANGE, routingKey: 'long', queue: `${EXCHANGE}.long` })
  @InboxHandler({ consumer: 'c'.repeat(201) })
  async handle(): Promise<void> {}
}

describe('@InboxHandler start-up checks', () => {
  beforeAll(() => database.reset());

  const boot = (...providers: Function[]) =>
    createTestApp({ database, outbox: { dispatcherEnabled: false }, providers: providers as never[] }).then((app) => app.close());

  it('fails fast without @RabbitSubscribe', async () => {
    await expect(boot(WithoutSubscribe)).rejects.toThrow(/@InboxHandler on WithoutSubscribe.handle needs @RabbitSubscribe/);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  it('fails fast on an RPC handler', async () => {
    await expect(boot(OnRpc)).rejects.toThrow(/OnRpc.handle: RPC handlers cannot be inbox handlers/);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  it('fails fast on a request-scoped provider', async () => {
    await expect(boot(RequestScoped)).rejects.toThrow(/RequestScoped.handle: the provider must be a singleton/);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  it('fails fast on a duplicate consumer name', async () => {
    await expect(boot(FirstInventory, SecondInventory)).rejects.toThrow(/consumer name "inventory" is already used/);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  it('fails fast on a consumer name longer than the inbox table holds', async () => {
    await expect(boot(LongConsumerName)).rejects.toThrow(/LongConsumerName.handle: consumer must be a non-empty string of at most 200 characters/);
  }, timeoutFor(STARTUP_TIMEOUT_MS));
});
