import { Body, ConsoleLogger, Controller, INestApplication, Post, UseGuards } from '@nestjs/common';
import { request as httpRequest } from 'node:http';
import { randomUUID } from 'node:crypto';
import { StandardWebhooksGuard, WebhookInbox } from '../../lib/entries/webhooks';
import { testDatabase } from '../support/database';
import { createTestHttpApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_webhook_refusal_logs');
const SECRETS = [`whsec_${Buffer.from('secret of the payments provider').toString('base64')}`];

@Controller('hooks')
class RefusingWebhooks {
  @Post('signed')
  @UseGuards(StandardWebhooksGuard.for({ secrets: SECRETS }))
  @WebhookInbox({ consumer: 'signed' })
  async onSigned(@Body() _event: unknown): Promise<void> {}

  @Post('open')
  @WebhookInbox({ consumer: 'open', maxBodyBytes: 1_024 })
  async onOpen(@Body() _event: unknown): Promise<void> {}
}

/** A line of the `WebhookInbox` log. */
interface LoggedLine {
  level: string;
  text: string;
}

/** A raw HTTP request, so that any header and body can be sent; resolves with the status. */
function post(url: string, path: string, body: string | Buffer, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const target = new URL(path, url);
    const request = httpRequest(target, { method: 'POST', headers: { 'content-length': String(Buffer.byteLength(body)), ...headers } }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', reject);
    request.end(body);
  });
}

describe('Webhook refusals in the log', () => {
  let app: INestApplication;
  let url: string;
  const lines: LoggedLine[] = [];
  const json = { 'content-type': 'application/json' };

  beforeAll(async () => {
    await database.reset();
    for (const level of ['error', 'warn', 'log'] as const) {
      const original = ConsoleLogger.prototype[level];
      jest.spyOn(ConsoleLogger.prototype, level).mockImplementation(function (this: ConsoleLogger, message: unknown, ...rest: unknown[]) {
        if (rest.at(-1) === 'WebhookInbox') lines.push({ level, text: String(message) });
        return original.call(this, message, ...rest);
      });
    }
    ({ app, url } = await createTestHttpApp({ database, controllers: [RefusingWebhooks] }));
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    jest.restoreAllMocks();
  });

  /** The refusal lines logged while `send` ran. */
  async function linesWhile(send: () => Promise<number>): Promise<{ status: number; logged: LoggedLine[] }> {
    const before = lines.length;
    const status = await send();
    // The body parser's refusals are logged once the response is finished, after the client has it.
    await new Promise((resolve) => setImmediate(resolve));
    return { status, logged: lines.slice(before) };
  }

  it.each([
    ['an unsigned request (the guard)', 401, '/hooks/signed', '{}', json, /StandardWebhooksGuard refused a request with 401, nothing stored: missing-headers/],
    [
      'a content type nothing parsed (the guard)',
      415,
      '/hooks/signed',
      'plain',
      { 'content-type': 'text/plain' },
      /StandardWebhooksGuard refused a request with 415.*text\/plain/,
    ],
    [
      'a content type nothing parsed (the inbox)',
      415,
      '/hooks/open',
      'plain',
      { 'content-type': 'text/plain' },
      /^open refused a request with 415.*text\/plain/,
    ],
    [
      'JSON that does not parse (the body parser)',
      400,
      '/hooks/open',
      '{"a":',
      json,
      /^open refused a request with 400, nothing stored: POST \/hooks\/open was refused before the inbox saw it/,
    ],
    [
      'a body over the consumer’s maxBodyBytes',
      413,
      '/hooks/open',
      JSON.stringify({ a: 'x'.repeat(2_000) }),
      json,
      /^open refused a request with 413, nothing stored: the body has 2008 bytes, more than the 1024/,
    ],
    [
      'a body over the body parser’s limit',
      413,
      '/hooks/open',
      JSON.stringify({ a: 'x'.repeat(200_000) }),
      json,
      /^open refused a request with 413, nothing stored: POST \/hooks\/open was refused before/,
    ],
  ])('logs %s once, on one line, with its status and reason', async (_, expected, path, body, headers, line) => {
    const { status, logged } = await linesWhile(() => post(url, path, body, { ...headers, 'webhook-id': randomUUID() }));
    expect(status).toBe(expected);
    expect(logged).toHaveLength(1);
    expect(logged[0].level).toBe('warn');
    expect(logged[0].text).toMatch(line);
    expect(logged[0].text).not.toContain('\n');
  });

  it('logs a flood of refusals in a bounded number of lines', async () => {
    const before = lines.length;
    const statuses = await Promise.all(Array.from({ length: 200 }, () => post(url, '/hooks/signed', '{}', { ...json, 'webhook-id': randomUUID() })));
    await new Promise((resolve) => setImmediate(resolve));
    expect(statuses.every((status) => status === 401)).toBe(true);
    const flood = lines.slice(before);
    // Ten lines a minute at most, the earlier tests' included; the last says the rest are counted.
    expect(flood.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThanOrEqual(10);
    expect(flood.at(-1)!.text).toContain('further ones are counted, not logged');
  });
});
