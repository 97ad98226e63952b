import { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Browser, chromium, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { MessageStatus, OutboxService } from '../../lib';
import { OutboxBoardModule } from '../../lib/board';
import { BOARD_TOKEN, BoardTokenGuard } from '../support/board-client';
import { brokerName } from '../support/broker-names';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../support/chromium';
import { testDatabase } from '../support/database';
import { QueueProbe } from '../support/queue-probe';
import { createTestHttpApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, waitUntil, WAIT_TIMEOUT_MS } from '../support/wait';

const database = testDatabase('it_board_browser');
const EXCHANGE = brokerName('it.board.browser');
const HOSTILE_PAYLOAD = {
  note: '<script>window.__pwned = 1</script>',
  image: '<img src=x onerror="window.__pwned = 2">',
  link: '<a href="javascript:window.__pwned = 3">click</a>',
};
const HOSTILE_ERROR = '<svg onload="window.__pwned = 4"></svg>"><script>window.__pwned = 5</script>';

if (!CHROMIUM_PATH) {
  console.warn('Board browser test skipped: no Chromium at /usr/bin/chromium (apt-get install chromium, or set CHROMIUM_PATH)');
}
const describeInBrowser = CHROMIUM_PATH ? describe : describe.skip;

/** An operator's session in a real Chromium, against the board of an app sending through a real RabbitMQ. */
describeInBrowser('the board in a browser', () => {
  let app: INestApplication;
  let url: string;
  let browser: Browser;
  let probe: QueueProbe;
  let page: Page;
  const ran: string[] = [];
  const ids: Record<string, string> = {};

  beforeAll(
    async () => {
      await database.reset();
      probe = await QueueProbe.bind(EXCHANGE, '#', brokerName('it.board.browser.probe'));
      ({ app, url } = await createTestHttpApp({
        database,
        outbox: { pollIntervalMs: 200 },
        imports: [OutboxBoardModule.forRoot({ path: 'board', guards: [BoardTokenGuard] })],
      }));
      browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
      const context = await browser.newContext();
      await context.addCookies([{ name: 'board_token', value: BOARD_TOKEN, url }]);
      page = await context.newPage();
      // Anything a stored value could make the page run shows up here.
      page.on('dialog', (dialog) => {
        ran.push(`dialog: ${dialog.message()}`);
        void dialog.dismiss();
      });
      page.on('pageerror', (error) => ran.push(`page error: ${error.message}`));
      page.on('console', (message) => ran.push(`console ${message.type()}: ${message.text()}`));

      // Sent once, then given up on by hand, as a dispatcher would after a fatal error.
      for (const name of ['first', 'second']) ids[name] = await publish('board.browser', { name });
      ids.hostile = await publish('board.hostile', HOSTILE_PAYLOAD);
      await probe.waitFor(3);
      await waitUntil(async () => (await database.statusCounts()).DONE === 3, 'the three messages sent');
      await database.sql(`UPDATE {outbox_message} SET status = ?, last_error = ? WHERE message_type = ?`, [
        MessageStatus.MANUAL_REQUIRED,
        'exchange gone',
        'board.browser',
      ]);
      await database.sql(`UPDATE {outbox_message} SET status = ?, last_error = ? WHERE message_type = ?`, [
        MessageStatus.MANUAL_REQUIRED,
        HOSTILE_ERROR,
        'board.hostile',
      ]);
    },
    timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await probe?.close();
  });

  async function publish(type: string, payload: unknown): Promise<string> {
    const outbox = app.get(OutboxService);
    const bizKey = `${type}:${randomUUID()}`;
    const { messageId } = await app
      .get(DataSource)
      .transaction((manager) => outbox.publish({ type, exchange: EXCHANGE, routingKey: type, bizKey, payload }, { manager }));
    return messageId;
  }

  it('clicks from the overview to a filtered list, requeues it, and the messages are sent again', async () => {
    await page.goto(`${url}/board`);
    await page.getByRole('link', { name: '3 outbox message(s)' }).click();
    await page.fill('input[name="type"]', 'board.browser');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect(page.locator('tr.row').count()).resolves.toBe(2);
    await page.getByRole('link', { name: 'Requeue…' }).click();
    await expect(page.locator('strong.count').textContent()).resolves.toBe('2');
    await page.getByRole('button', { name: 'Requeue 2 message(s)' }).click();
    await expect(page.locator('p.result').textContent()).resolves.toBe('requeue: 2 message(s) changed.');

    await probe.waitFor(5);
    expect(probe.messageIds.filter((id) => id === ids.first || id === ids.second)).toHaveLength(4);
    await waitUntil(async () => (await database.statusCounts()).DONE === 2, 'the requeued messages sent');
    expect(ran).toEqual([]);
  });

  it('shows a hostile payload and error as text, and nothing in them runs', async () => {
    await page.goto(`${url}/board/messages?status=MANUAL_REQUIRED`);
    await page.getByRole('link', { name: ids.hostile }).click();
    const stored = await page.locator('pre.stored').allTextContents();
    expect(stored.join('\n')).toContain(HOSTILE_PAYLOAD.note);
    expect(stored.join('\n')).toContain(HOSTILE_ERROR);
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('script, img, svg, a[href^="javascript:"]').count()).toBe(0);
    expect(ran).toEqual([]);

    if (process.env.BOARD_SCREENSHOT) {
      await page.goto(`${url}/board`);
      await page.screenshot({ path: process.env.BOARD_SCREENSHOT, fullPage: true });
    }
  });

  it('refuses the board to a browser the guard refuses', async () => {
    const stranger = await browser.newPage();
    const response = await stranger.goto(`${url}/board`);
    expect(response?.status()).toBe(403);
    await stranger.close();
  });

  it('refuses a POST that carries no CSRF token, and changes nothing', async () => {
    const response = await page.request.post(`${url}/board/actions`, { form: { action: 'abandon', status: 'MANUAL_REQUIRED' } });
    expect(response.status()).toBe(403);
    expect(await response.text()).toContain('no valid CSRF token');
    expect((await database.statusCounts()).MANUAL_REQUIRED).toBe(1);
  });
});
