import { Controller, HttpCode, INestApplication, Module, Post, Req, UseGuards } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { randomBytes } from 'node:crypto';
import { OutboxOptionsError } from '../../lib/errors';
import { WebhookOptionsError } from '../../lib/errors/options.errors';
import { signWebhook } from '../../lib/transport/http/standard-webhooks';
import { StandardWebhooksGuard, VERIFIED_WEBHOOK, VerifiedWebhook } from '../../lib/webhooks/standard-webhooks.guard';

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const [current, previous, retired] = [newSecret(), newSecret(), newSecret()];
const CONFIGURED_SECRET = 'CONFIGURED_SECRET';

@Controller('hooks')
class HooksController {
  @Post('payments')
  @HttpCode(200)
  @UseGuards(StandardWebhooksGuard.for({ secrets: [current, previous] }))
  payments(@Req() request: { [VERIFIED_WEBHOOK]?: VerifiedWebhook }) {
    return request[VERIFIED_WEBHOOK];
  }

  @Post('configured')
  @HttpCode(200)
  @UseGuards(StandardWebhooksGuard.for({ secrets: (moduleRef) => moduleRef.get<string>(CONFIGURED_SECRET, { strict: false }), toleranceSeconds: 60 }))
  configured() {
    return { ok: true };
  }

  @Post('misconfigured')
  @UseGuards(StandardWebhooksGuard.for({ secrets: () => 'whsec_not base64, and secret' }))
  misconfigured() {
    return { ok: true };
  }
}

@Module({ controllers: [HooksController], providers: [{ provide: CONFIGURED_SECRET, useValue: current }] })
class HooksModule {}

const nowSeconds = () => Math.floor(Date.now() / 1000);
const body = JSON.stringify({ type: 'payment.succeeded', data: { id: 'pay_1', amount: 4200 } });

/** The headers a sender signing with `secret` sends for `content`. */
function signed(secret: string, { id = 'msg_1', timestamp = nowSeconds(), content = body } = {}): Record<string, string> {
  const signature = signWebhook({ id, timestamp, body: content, secret });
  return { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
}

async function start(rawBody: boolean): Promise<{ app: INestApplication; url: string }> {
  const app = await NestFactory.create(HooksModule, { rawBody, logger: false });
  await app.listen(0, '127.0.0.1');
  return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1') };
}

describe('StandardWebhooksGuard on an HTTP route', () => {
  let app: INestApplication;
  let url: string;
  const post = (path: string, headers: Record<string, string>, content: string = body) =>
    fetch(`${url}/hooks/${path}`, { method: 'POST', headers, body: content });

  beforeAll(async () => {
    ({ app, url } = await start(true));
  }, 60_000);

  afterAll(async () => {
    await app?.close();
  }, 60_000);

  it('lets a validly signed request through, with its verified id and timestamp on the request', async () => {
    const timestamp = nowSeconds();
    const response = await post('payments', signed(current, { id: 'msg_42', timestamp }));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ id: 'msg_42', timestamp });
  });

  it('accepts either secret while one is rotated out, and not one already retired', async () => {
    expect((await post('payments', signed(previous))).status).toBe(200);
    expect((await post('payments', signed(current))).status).toBe(200);
    expect((await post('payments', signed(retired))).status).toBe(401);
  });

  it('answers 401 with the reason for a bad signature, a stale timestamp or missing headers', async () => {
    const cases: [Record<string, string>, string][] = [
      [{ ...signed(current), 'webhook-signature': signed(current, { content: '{}' })['webhook-signature'] }, 'no-matching-signature'],
      [signed(current, { timestamp: nowSeconds() - 3_600 }), 'expired'],
      [signed(current, { timestamp: nowSeconds() + 3_600 }), 'future'],
      [{ 'content-type': 'application/json' }, 'missing-headers'],
      [{ ...signed(current), 'webhook-timestamp': 'soon' }, 'malformed'],
    ];
    for (const [headers, reason] of cases) {
      const response = await post('payments', headers);
      expect({ status: response.status, body: await response.json() }).toEqual({
        status: 401,
        body: { statusCode: 401, error: 'Unauthorized', message: `Webhook rejected: ${reason}` },
      });
    }
  });

  it('refuses a captured request replayed after the tolerance, whether its timestamp is kept or refreshed', async () => {
    const captured = signed(current, { timestamp: nowSeconds() - 10 * 60 });
    expect((await post('payments', captured)).status).toBe(401);
    expect((await post('payments', { ...captured, 'webhook-timestamp': String(nowSeconds()) })).status).toBe(401);
  });

  it('verifies the bytes sent, so the same JSON with other spacing fails', async () => {
    const headers = signed(current);
    expect((await post('payments', headers, JSON.stringify(JSON.parse(body), null, 2))).status).toBe(401);
  });

  it('verifies a signed request without a body', async () => {
    const headers = signed(current, { content: '' });
    const response = await fetch(`${url}/hooks/payments`, { method: 'POST', headers });
    expect(response.status).toBe(200);
  });

  it('reads secrets from a function at request time, with the tolerance it was given', async () => {
    expect((await post('configured', signed(current))).status).toBe(200);
    expect((await post('configured', signed(current, { timestamp: nowSeconds() - 120 }))).status).toBe(401);
    expect((await post('configured', signed(previous))).status).toBe(401);
  });

  it('answers 500 without quoting the secret when a secrets function returns a bad one', async () => {
    const response = await post('misconfigured', signed(current));
    expect(response.status).toBe(500);
    expect(await response.text()).not.toMatch(/base64|secret/);
  });

  it('answers 415 naming the cure for a body of a type the app has no parser for', async () => {
    const response = await post('payments', { ...signed(current), 'content-type': 'text/plain' });
    expect(response.status).toBe(415);
    expect(((await response.json()) as { message: string }).message).toMatch(/app\.useBodyParser/);
  });
});

describe('StandardWebhooksGuard in an app created without rawBody', () => {
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    ({ app, url } = await start(false));
  }, 60_000);

  afterAll(async () => {
    await app?.close();
  }, 60_000);

  it('answers 500 saying to pass rawBody: true, and never verifies a re-serialized body', async () => {
    const response = await fetch(`${url}/hooks/payments`, { method: 'POST', headers: signed(current), body });
    expect(response.status).toBe(500);
    expect(((await response.json()) as { message: string }).message).toMatch(/NestFactory\.create\(AppModule, \{ rawBody: true \}\)/);
  });
});

describe('StandardWebhooksGuard.for', () => {
  it.each([
    ['no secrets', { secrets: [] }, /secrets must be a "whsec_…" secret or a non-empty list/],
    ['a secret that is not base64', { secrets: [current, 'whsec_%%%'] }, /secrets\[1\] is not base64/],
    ['an unset environment variable', { secrets: [process.env.NESTJS_OUTBOX_UNSET_WEBHOOK_SECRET as string] }, /secrets\[0\] must be a string/],
    ['a zero tolerance', { secrets: current, toleranceSeconds: 0 }, /toleranceSeconds must be a positive number/],
    ['a misspelt option', { secrets: current, tolerance: 60 }, /tolerance is not a StandardWebhooksGuard option/],
  ])('refuses %s when the guard is declared, naming the option', (_, options, message) => {
    const declare = () => StandardWebhooksGuard.for(options);
    expect(declare).toThrow(WebhookOptionsError);
    expect(declare).toThrow(OutboxOptionsError);
    expect(declare).toThrow(message);
  });

  it('returns a distinct guard class for each declaration', () => {
    expect(StandardWebhooksGuard.for({ secrets: current })).not.toBe(StandardWebhooksGuard.for({ secrets: current }));
  });
});
