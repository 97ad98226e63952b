import { Body, Get, HttpStatus, Inject, Logger, Post, Query, Req, Res } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { randomBytes } from 'node:crypto';
import { OutboxAdmin } from '../admin/outbox-admin.service';
import { CliUsageError } from '../cli/cli-usage.error';
import { OutboxError } from '../errors';
import { describeError } from '../retry/error-classifier';
import { actionOf, countAction, describeTarget, readTarget, runAction, targetOf } from './board-actions';
import { boardFilter } from './board-filter';
import { BOARD_ADMIN, BOARD_OPTIONS, OutboxBoardOptions } from './board-options';
import { boardFields, BoardRequest, fieldOf, isSecure } from './board-request';
import { sendBoardResponse } from './board-responses';
import { BOARD_ICON, BOARD_STYLESHEET } from './board-stylesheet';
import { CSRF_FIELD, CsrfTokens, crossSiteReason, nonceCookie, nonceOf } from './csrf';
import { boardHref } from './html';
import { BoardView } from './pages/layout';
import { confirmPage, errorPage, resultPage } from './pages/confirm-page';
import { detailPage } from './pages/detail-page';
import { listPage } from './pages/list-page';
import { overviewPage } from './pages/overview-page';

/** The activity window of the overview: the last hour, in 5-minute slices. */
const ACTIVITY_WINDOW_MS = 3_600_000;
const ACTIVITY_SLICES = 12;
const PARKED_KEYS_SHOWN = 20;

/** A page's answer: its status and HTML. */
interface Answer {
  status: number;
  body: string;
}

/**
 * The board's pages and its one action endpoint. `OutboxBoardModule.forRoot()` mounts a subclass
 * at the configured path with the configured guards. Every page is rendered as a string of escaped
 * HTML and sent through Nest's HTTP adapter, so it runs the same on Express and Fastify; every
 * change is a POST carrying a CSRF token, confirmed first on a page showing its count.
 */
export class BoardController {
  private readonly logger = new Logger('OutboxBoard');
  private readonly csrf: CsrfTokens;

  constructor(
    @Inject(BOARD_OPTIONS) private readonly options: OutboxBoardOptions,
    @Inject(BOARD_ADMIN) private readonly admin: OutboxAdmin,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    this.csrf = new CsrfTokens(options.csrfSecret ? Buffer.from(options.csrfSecret) : randomBytes(32));
  }

  /** Counts per status, transport and consumer, lag, parked keys, the last hour's activity. */
  @Get()
  async overview(@Req() request: BoardRequest, @Res() response: unknown): Promise<void> {
    await this.answer(request, response, '', async (view) => {
      const stats = await this.admin.stats();
      const parkedKeys = await this.admin.parkedKeys(PARKED_KEYS_SHOWN);
      const parkedInboxKeys = await this.admin.parkedInboxKeys(PARKED_KEYS_SHOWN);
      const activity = await this.admin.recentActivity(ACTIVITY_WINDOW_MS, ACTIVITY_SLICES);
      return overviewPage(view, { stats, parkedKeys, parkedInboxKeys, activity, windowMs: ACTIVITY_WINDOW_MS });
    });
  }

  /** One page of messages matching the CLI's filters, by keyset (`after`: the previous page's last id). */
  @Get('messages')
  async messages(@Req() request: BoardRequest, @Res() response: unknown, @Query() query: unknown): Promise<void> {
    await this.answer(request, response, 'messages', async (view) => {
      const fields = boardFields(query);
      const filter = boardFilter(fields, ['order', 'after']);
      const order = fieldOf(fields, 'order') === 'oldest' ? 'oldest' : 'newest';
      const window = { after: fieldOf(fields, 'after') || undefined, limit: this.options.pageSize, order } as const;
      const page = filter.table === 'inbox' ? await this.admin.listInboxMessages(filter.fields, window) : await this.admin.listMessages(filter.fields, window);
      return listPage(view, filter, order, page);
    });
  }

  /** A message whole: `id`, and `consumer` with `inbox=1` for an inbox delivery. */
  @Get('message')
  async message(@Req() request: BoardRequest, @Res() response: unknown, @Query() query: unknown): Promise<void> {
    await this.answer(request, response, 'message', async (view) => {
      const fields = boardFields(query);
      const messageId = fieldOf(fields, 'id') ?? '';
      const target = { inbox: fieldOf(fields, 'inbox') === '1', messageId, consumer: fieldOf(fields, 'consumer') ?? '' };
      const message = await readTarget(this.admin, target);
      if (!message)
        return { status: HttpStatus.NOT_FOUND, body: errorPage(view, 'Not found', `No message ${messageId} in the ${target.inbox ? 'inbox' : 'outbox'}.`) };
      return detailPage(view, message);
    });
  }

  /** The confirmation of an action: how many messages it would change, and the form that changes them. */
  @Get('confirm')
  async confirm(@Req() request: BoardRequest, @Res() response: unknown, @Query() query: unknown): Promise<void> {
    await this.answer(request, response, 'confirm', async (view) => {
      if (this.options.readOnly) return readOnlyAnswer(view);
      const fields = boardFields(query);
      const action = actionOf(fields);
      const target = targetOf(fields, action);
      const count = await countAction(this.admin, action, target);
      const back = target.kind === 'message' ? boardHref(view.base, 'message', target.fields) : boardHref(view.base, 'messages', target.filter.query);
      const carried = target.kind === 'message' ? target.fields : target.filter.query;
      return confirmPage(view, { action, count, scope: describeTarget(target), fields: carried, back });
    });
  }

  /** Runs a confirmed action: only from the board's own origin, with the form's CSRF token, and never in read-only mode. */
  @Post('actions')
  async act(@Req() request: BoardRequest, @Res() response: unknown, @Body() body: unknown): Promise<void> {
    await this.answer(request, response, 'actions', async (view) => {
      if (this.options.readOnly) return readOnlyAnswer(view);
      const crossSite = crossSiteReason(request);
      if (crossSite) return this.refused(view, `Refused: ${crossSite}.`);
      const fields = boardFields(body);
      if (!this.csrf.verifies(nonceOf(request), fieldOf(fields, CSRF_FIELD))) {
        return this.refused(view, 'Refused: the form carries no valid CSRF token. Reload the page and confirm again.');
      }
      const action = actionOf(fields);
      const target = targetOf(fields, action);
      const changed = await runAction(this.admin, action, target);
      this.logger.log(`${action}: ${changed} message(s) of ${describeTarget(target)}`);
      const back = target.kind === 'message' ? boardHref(view.base, 'message', target.fields) : boardHref(view.base, 'messages', target.filter.query);
      return resultPage(view, `${action}: ${changed} message(s) changed.`, back);
    });
  }

  /** The stylesheet, served by the board: no CDN, no inline style. */
  @Get('assets/board.css')
  stylesheet(@Res() response: unknown): void {
    sendBoardResponse(this.adapterHost.httpAdapter, response, HttpStatus.OK, BOARD_STYLESHEET, 'text/css; charset=utf-8');
  }

  /** The icon, served by the board, so the browser does not ask the app's root for one. */
  @Get('assets/icon.svg')
  icon(@Res() response: unknown): void {
    sendBoardResponse(this.adapterHost.httpAdapter, response, HttpStatus.OK, BOARD_ICON, 'image/svg+xml');
  }

  private refused(view: BoardView, reason: string): Answer {
    this.logger.warn(reason);
    return { status: HttpStatus.FORBIDDEN, body: errorPage(view, 'Refused', reason) };
  }

  /**
   * Renders one page: gives a browser without one its CSRF nonce, and turns a refusal of the
   * admin's (a bad filter, an empty filter for a change) into a 400 page saying why.
   */
  private async answer(request: BoardRequest, response: unknown, route: string, render: (view: BoardView) => Promise<string | Answer>): Promise<void> {
    const adapter = this.adapterHost.httpAdapter;
    const base = this.baseOf(request, route);
    let nonce = nonceOf(request);
    if (!nonce) {
      nonce = CsrfTokens.nonce();
      adapter.setHeader(response, 'Set-Cookie', nonceCookie(nonce, base, isSecure(request)));
    }
    const view: BoardView = {
      base,
      title: this.options.title,
      readOnly: this.options.readOnly === true,
      displayLimit: this.options.displayLimit,
      csrfToken: this.csrf.tokenFor(nonce),
    };
    let answer: Answer;
    try {
      const rendered = await render(view);
      answer = typeof rendered === 'string' ? { status: HttpStatus.OK, body: rendered } : rendered;
    } catch (error) {
      if (error instanceof OutboxError || error instanceof CliUsageError) {
        answer = { status: HttpStatus.BAD_REQUEST, body: errorPage(view, 'Refused', error.message) };
      } else {
        this.logger.error(`The board could not answer ${route || 'the overview'}: ${describeError(error, 500)}`);
        answer = { status: HttpStatus.INTERNAL_SERVER_ERROR, body: errorPage(view, 'Failed', 'The board could not answer; the application log says why.') };
      }
    }
    sendBoardResponse(adapter, response, answer.status, answer.body);
  }

  /**
   * The board's path as the browser reached it (with the app's global prefix), from the request's
   * path less the route; the configured path when that is not what it ends with.
   */
  private baseOf(request: BoardRequest, route: string): string {
    const raw = request as BoardRequest & { originalUrl?: string; url?: string };
    const path = (raw.originalUrl ?? raw.url ?? '').split('?')[0].replace(/\/+$/, '');
    const suffix = route ? `/${route}` : '';
    const base = path.endsWith(suffix) ? path.slice(0, path.length - suffix.length) : '';
    const mount = `/${this.options.path}`;
    return base.endsWith(mount) && base.startsWith('/') && !base.startsWith('//') && /^[A-Za-z0-9/_.~%-]*$/.test(base) ? base : mount;
  }
}

function readOnlyAnswer(view: BoardView): Answer {
  return { status: HttpStatus.FORBIDDEN, body: errorPage(view, 'Read-only', 'This board is read-only: it changes no message.') };
}
