import { INestApplication } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { MessageStatus, OutboxService } from '../../lib';
import { OutboxAdmin } from '../../lib/entries/admin';
import { OutboxBoardModule } from '../../lib/board';
import { CapturingOutboxTransport } from '../../lib/testing';
import { BoardClient, BoardTokenGuard, hiddenFields } from '../support/board-client';
import { testDatabase } from '../support/database';
import { createTestHttpApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_board');
const { PENDING, DONE, MANUAL_REQUIRED, ABANDONED } = MessageStatus;
const BASE = '/ops/board';
const HOSTILE = `<script>window.__pwned = 1</script><img src=x onerror="alert(1)"><a href="javascript:alert(1)">x</a>`;

/**
 * The board's pages and actions over HTTP, on each database: the same refusals as the CLI, CSRF
 * and origin checks, escaping, keyset paging, and actions that change exactly what they counted.
 */
describe('OutboxBoardModule', () => {
  let app: INestApplication;
  let url: string;
  let outbox: OutboxService;

  beforeAll(async () => {
    await database.reset();
    ({ app, url } = await createTestHttpApp({
      database,
      outbox: { dispatcherEnabled: false },
      statics: { transport: CapturingOutboxTransport },
      imports: [OutboxBoardModule.forRoot({ path: 'ops/board', guards: [BoardTokenGuard], pageSize: 2, displayLimit: 1000 })],
    }));
    outbox = app.get(OutboxService);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(() => app?.close());

  /** Publishes a message of `type` and gives it `status` (and an error), as a dispatcher would have. */
  async function message(type: string, status: MessageStatus, payload: unknown = { n: 1 }, lastError: string | null = null): Promise<string> {
    const { messageId } = await app
      .get(DataSource)
      .transaction((manager) => outbox.publish({ type, exchange: 'board.x', routingKey: type, payload }, { manager }));
    await database.sql(`UPDATE {outbox_message} SET status = ?, last_error = ? WHERE message_id = ?`, [status, lastError, messageId]);
    return messageId;
  }

  /** Publishes a message of an ordering key, PENDING. */
  async function keyed(orderingKey: string): Promise<string> {
    const publish = { type: 'board.keyed', exchange: 'board.x', routingKey: 'board.keyed', payload: {}, orderingKey };
    return (await app.get(DataSource).transaction((manager) => outbox.publish(publish, { manager }))).messageId;
  }

  async function statusOf(messageId: string): Promise<string> {
    const [row] = await database.sql<{ status: string }>(`SELECT status FROM {outbox_message} WHERE message_id = ?`, [messageId]);
    return row.status;
  }

  it('refuses every page and the stylesheet to a request the guard refuses', async () => {
    const anonymous = new BoardClient(url, null);
    expect((await anonymous.get(BASE)).status).toBe(403);
    expect((await anonymous.get(`${BASE}/assets/board.css`)).status).toBe(403);
    expect((await anonymous.post(`${BASE}/actions`, [['action', 'requeue']])).status).toBe(403);
  });

  it('answers with a strict Content-Security-Policy, nosniff and no referrer, and serves its own stylesheet', async () => {
    const board = new BoardClient(url);
    const page = await board.get(BASE);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.headers.get('content-security-policy')).toContain("script-src 'none'");
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(page.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Strict/);
    expect(page.html).toContain(`href="${BASE}/assets/board.css"`);
    expect(page.html).not.toMatch(/<script|style="|https?:\/\//);
    const css = await board.get(`${BASE}/assets/board.css`);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
  });

  describe('with messages', () => {
    const ids: Record<string, string> = {};

    beforeAll(async () => {
      ids.manual1 = await message('board.manual', MANUAL_REQUIRED, { n: 1 }, 'exchange gone');
      ids.manual2 = await message('board.manual', MANUAL_REQUIRED, { n: 2 }, 'exchange gone');
      ids.manual3 = await message('board.manual', MANUAL_REQUIRED, { n: 3 }, 'exchange gone');
      ids.done = await message('board.done', DONE);
      ids.pending = await message('board.pending', PENDING);
      ids.hostile = await message('board.hostile', MANUAL_REQUIRED, { html: HOSTILE, big: 'y'.repeat(5000) }, HOSTILE);
    });

    it('counts the last hour by slice from the rows: written now, sent 7 minutes ago', async () => {
      await database.sql(`UPDATE {outbox_message} SET processed_at = ${database.timeAgo(7 * 60_000)} WHERE message_id = ?`, [ids.done]);
      const activity = await app.get(OutboxAdmin).recentActivity();
      expect(activity.outbox.created).toEqual([...Array<number>(11).fill(0), 6]);
      expect(activity.outbox.done).toEqual([...Array<number>(10).fill(0), 1, 0]);
      expect(activity.inbox).toEqual({ created: Array<number>(12).fill(0), done: Array<number>(12).fill(0) });
    });

    it('shows counts per status and transport on the overview, MANUAL_REQUIRED first', async () => {
      const page = await new BoardClient(url).get(BASE);
      expect(page.html).toContain('4 outbox message(s)</a>');
      expect(page.html).toMatch(/<th><a href="[^"]*transport=default">default<\/a><\/th>/);
    });

    it('lists with the CLI filters, a page at a time by keyset', async () => {
      const board = new BoardClient(url);
      const first = await board.get(`${BASE}/messages?status=MANUAL_REQUIRED&type=board.manual&order=oldest`);
      expect(first.status).toBe(200);
      expect(rowsOf(first.html)).toEqual([ids.manual1, ids.manual2]);
      const next = /<a class="next" href="([^"]*)"/.exec(first.html)![1].replace(/&amp;/g, '&');
      const second = await board.get(next);
      expect(rowsOf(second.html)).toEqual([ids.manual3]);
      expect(second.html).not.toContain('class="next"');
    });

    it('refuses a filter the CLI refuses, with its reason', async () => {
      const page = await new BoardClient(url).get(`${BASE}/messages?status=SENT`);
      expect(page.status).toBe(400);
      expect(page.html).toContain('status must be a MessageStatus');
    });

    it('shows a hostile payload, headers and error as text, and cuts a huge payload', async () => {
      const page = await new BoardClient(url).get(`${BASE}/message?id=${ids.hostile}`);
      expect(page.status).toBe(200);
      expect(page.html).not.toContain('<script>');
      expect(page.html).not.toContain('<img');
      expect(page.html).not.toContain('href="javascript:');
      expect(page.html).toContain('&lt;script&gt;window.__pwned = 1&lt;/script&gt;');
      expect(page.html).toMatch(/Cut: the first 1000 of \d+ characters are shown/);
    });

    it('refuses a change with an empty filter, as the CLI does', async () => {
      const board = new BoardClient(url);
      const confirm = await board.get(`${BASE}/confirm?action=requeue`);
      expect(confirm.status).toBe(400);
      expect(confirm.html).toContain('refuses an empty filter');
      const misspelt = await board.get(`${BASE}/confirm?action=purge&status=DONE&bizkey=order-1`);
      expect(misspelt.status).toBe(400);
      expect(misspelt.html).toContain('unknown field &quot;bizkey&quot;');
      await board.get(BASE);
      const token = hiddenFields((await board.get(`${BASE}/confirm?action=requeue&status=MANUAL_REQUIRED`)).html).find(([name]) => name === '_csrf')!;
      const posted = await board.post(`${BASE}/actions`, [token, ['action', 'purge']]);
      expect(posted.status).toBe(400);
      expect(await statusOf(ids.done)).toBe(DONE);
    });

    it('refuses a POST without the CSRF token, or from another origin, and changes nothing', async () => {
      const board = new BoardClient(url);
      const confirm = await board.get(`${BASE}/confirm?action=abandon&type=board.manual`);
      const fields = hiddenFields(confirm.html);
      const withoutToken = fields.filter(([name]) => name !== '_csrf');
      expect((await board.post(`${BASE}/actions`, withoutToken)).status).toBe(403);
      expect((await board.post(`${BASE}/actions`, [...withoutToken, ['_csrf', 'forged']])).status).toBe(403);
      expect((await new BoardClient(url).post(`${BASE}/actions`, fields)).status).toBe(403); // another browser: its own cookie
      expect((await board.post(`${BASE}/actions`, fields, { origin: 'https://evil.example' })).status).toBe(403);
      expect((await board.post(`${BASE}/actions`, fields, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
      expect(await statusOf(ids.manual1)).toBe(MANUAL_REQUIRED);
    });

    it('requeues by filter what its confirmation counted', async () => {
      const board = new BoardClient(url);
      const confirm = await board.get(`${BASE}/confirm?action=requeue&type=board.manual&status=MANUAL_REQUIRED`);
      expect(confirm.html).toContain('<strong class="count">3</strong>');
      const done = await board.submitConfirmation(confirm, BASE);
      expect(done.status).toBe(200);
      expect(done.html).toContain('requeue: 3 message(s) changed.');
      for (const id of [ids.manual1, ids.manual2, ids.manual3]) expect(await statusOf(id)).toBe(PENDING);
      expect(await statusOf(ids.hostile)).toBe(MANUAL_REQUIRED);
    });

    it('abandons one message by id, after a confirmation of 1', async () => {
      const board = new BoardClient(url);
      const confirm = await board.get(`${BASE}/confirm?action=abandon&id=${ids.pending}`);
      expect(confirm.html).toContain('<strong class="count">1</strong>');
      expect((await board.submitConfirmation(confirm, BASE)).html).toContain('abandon: 1 message(s) changed.');
      expect(await statusOf(ids.pending)).toBe(ABANDONED);
    });

    it('replays and purges by filter', async () => {
      const board = new BoardClient(url);
      const replay = await board.get(`${BASE}/confirm?action=replay&type=board.done`);
      expect(replay.html).toContain('<strong class="count">1</strong>');
      await board.submitConfirmation(replay, BASE);
      expect(await statusOf(ids.done)).toBe(PENDING);
      const purge = await board.get(`${BASE}/confirm?action=purge&status=ABANDONED&type=board.pending`);
      expect(purge.html).toContain('<strong class="count">1</strong>');
      expect((await board.submitConfirmation(purge, BASE)).html).toContain('purge: 1 message(s) changed.');
      expect(await database.sql(`SELECT id FROM {outbox_message} WHERE message_id = ?`, [ids.pending])).toEqual([]);
    });

    it('shows an ordering key parked behind a MANUAL_REQUIRED head, escaped, with what waits behind it', async () => {
      const key = '<b onmouseover="x()">key</b>';
      const head = await keyed(key);
      await keyed(key);
      await database.sql(`UPDATE {outbox_message} SET status = 'MANUAL_REQUIRED', last_error = 'rejected' WHERE message_id = ?`, [head]);
      const page = await new BoardClient(url).get(BASE);
      const row = new RegExp(
        `<tr>\\s*<td>outbox</td>\\s*<td>&lt;b onmouseover=&quot;x\\(\\)&quot;&gt;key&lt;/b&gt;</td>[\\s\\S]*?${head}[\\s\\S]*?<td>1</td>\\s*<td class="error">rejected</td>`,
      );
      expect(page.html).toMatch(row);
      expect(page.html).not.toContain('<b onmouseover');
    });

    it('shows an inbox delivery and requeues the deliveries of a consumer', async () => {
      for (const messageId of ['inbox-1', 'inbox-2']) {
        await database.sql(
          `INSERT INTO {inbox_message} (consumer, message_id, message_type, exchange, routing_key, payload, headers, status, max_attempts, last_error)
           VALUES ('billing', ?, 'invoice.due', 'x', 'k', ?, '{}', 'MANUAL_REQUIRED', 3, 'handler failed')`,
          [messageId, HOSTILE],
        );
      }
      const board = new BoardClient(url);
      const detail = await board.get(`${BASE}/message?inbox=1&consumer=billing&id=inbox-1`);
      expect(detail.status).toBe(200);
      expect(detail.html).toContain('&lt;script&gt;window.__pwned = 1&lt;/script&gt;');
      expect(detail.html).not.toContain('<script>');
      const list = await board.get(`${BASE}/messages?inbox=1&consumer=billing`);
      expect(rowsOf(list.html)).toEqual(['inbox-2', 'inbox-1']);
      expect(list.html).not.toContain('Replay…');
      const confirm = await board.get(`${BASE}/confirm?action=requeue&inbox=1&consumer=billing`);
      expect(confirm.html).toContain('<strong class="count">2</strong>');
      expect((await board.submitConfirmation(confirm, BASE)).html).toContain('requeue: 2 message(s) changed.');
      expect(await database.sql(`SELECT status FROM {inbox_message} WHERE consumer = 'billing'`)).toEqual([{ status: 'FAILED' }, { status: 'FAILED' }]);
    });
  });
});

describe('OutboxBoardModule, read-only', () => {
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    await database.reset();
    ({ app, url } = await createTestHttpApp({
      database,
      outbox: { dispatcherEnabled: false },
      statics: { transport: CapturingOutboxTransport },
      imports: [OutboxBoardModule.forRoot({ guards: [BoardTokenGuard], readOnly: true })],
    }));
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(() => app?.close());

  it('shows the lists without actions, and refuses every confirmation and POST', async () => {
    const board = new BoardClient(url);
    const list = await board.get('/board/messages?status=FAILED');
    expect(list.status).toBe(200);
    expect(list.html).toContain('read-only');
    expect(list.html).not.toContain('/board/confirm');
    expect((await board.get('/board/confirm?action=requeue&status=FAILED')).status).toBe(403);
    const posted = await board.post('/board/actions', [
      ['action', 'requeue'],
      ['status', 'FAILED'],
    ]);
    expect(posted.status).toBe(403);
    expect(posted.html).toContain('This board is read-only');
  });
});

/** The message ids of a listing's rows, in order. */
function rowsOf(html: string): string[] {
  return [...html.matchAll(/<tr class="row">\s*<td>\d+<\/td>\s*<td><a href="[^"]*">([^<]*)<\/a>/g)].map(([, id]) => id);
}
