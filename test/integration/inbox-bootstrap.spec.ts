import { RabbitRPC, RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { Controller, Injectable, Param, Post, Res, Scope } from '@nestjs/common';
import { InboxHandler } from '../../lib';
import { WebhookInbox } from '../../lib/entries/webhooks';
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

  it(
    'fails fast without @RabbitSubscribe',
    async () => {
      await expect(boot(WithoutSubscribe)).rejects.toThrow(/@InboxHandler on WithoutSubscribe.handle needs @RabbitSubscribe/);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'fails fast on an RPC handler',
    async () => {
      await expect(boot(OnRpc)).rejects.toThrow(/OnRpc.handle: RPC handlers cannot be inbox handlers/);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'fails fast on a request-scoped provider',
    async () => {
      await expect(boot(RequestScoped)).rejects.toThrow(/RequestScoped.handle: the provider must be a singleton/);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'fails fast on a duplicate consumer name',
    async () => {
      await expect(boot(FirstInventory, SecondInventory)).rejects.toThrow(/consumer name "inventory" is already used/);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'fails fast on a consumer name longer than the inbox table holds',
    async () => {
      await expect(boot(LongConsumerName)).rejects.toThrow(/LongConsumerName.handle: consumer must be a non-empty string of at most 200 characters/);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );
});

@Controller('hooks')
class WebhookWithResponse {
  @Post('response')
  @WebhookInbox()
  async handle(@Res() _response: unknown): Promise<void> {}
}

@Controller('hooks')
class WebhookWithParam {
  @Post(':account')
  @WebhookInbox()
  async handle(@Param('account') _account: string): Promise<void> {}
}

@Injectable()
class PaymentsHandler {
  @RabbitSubscribe({ exchange: EXCHANGE, routingKey: 'payments', queue: `${EXCHANGE}.payments` })
  @InboxHandler({ consumer: 'payments' })
  async handle(): Promise<void> {}
}

@Controller('hooks')
class PaymentsWebhook {
  @Post('payments')
  @WebhookInbox({ consumer: 'payments' })
  async handle(): Promise<void> {}
}

@Controller('hooks')
class BadlyConfiguredWebhook {
  @Post('bad')
  @WebhookInbox({ maxAttempts: 0, headers: ['webhook id'], status: 201 as never })
  async handle(): Promise<void> {}
}

describe('@WebhookInbox start-up checks', () => {
  beforeAll(() => database.reset());

  const boot = (controllers: Function[], providers: Function[] = []) =>
    createTestApp({ database, outbox: { dispatcherEnabled: false }, controllers: controllers as never[], providers: providers as never[] }).then((app) =>
      app.close(),
    );

  it.each([
    ['@Res()', WebhookWithResponse],
    ['@Param()', WebhookWithParam],
  ])(
    'fails fast on a %s parameter, naming the parameters the stored request can give',
    async (_, controller) => {
      await expect(boot([controller])).rejects.toThrow(
        new RegExp(
          `@WebhookInbox on ${controller.name}\\.handle: the method runs later, with the stored request, so its parameters can be @Body\\(\\), @RawBody\\(\\), @Headers\\(\\) \\(the kept ones\\), @Req\\(\\) or custom decorators`,
        ),
      );
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'fails fast on a consumer name an @InboxHandler already uses',
    async () => {
      // Whichever explorer runs second names the other.
      await expect(boot([PaymentsWebhook], [PaymentsHandler])).rejects.toThrow(
        /(@WebhookInbox on PaymentsWebhook|@InboxHandler on PaymentsHandler)\.handle: consumer name "payments" is already used by (@InboxHandler on PaymentsHandler|@WebhookInbox on PaymentsWebhook)\.handle/,
      );
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'fails fast on bad options, naming each',
    async () => {
      const failure = boot([BadlyConfiguredWebhook]);
      await expect(failure).rejects.toThrow(/@WebhookInbox on BadlyConfiguredWebhook\.handle: maxAttempts must be an integer from 1 to 1000/);
      await expect(failure).rejects.toThrow(/BadlyConfiguredWebhook\.handle: status must be 200 or 202/);
      await expect(failure).rejects.toThrow(/BadlyConfiguredWebhook\.handle: headers must be an array of HTTP header names/);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );
});
