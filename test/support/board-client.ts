import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';

/** The header the test guard reads, and its one accepted value. */
export const BOARD_TOKEN_HEADER = 'x-board-token';
export const BOARD_TOKEN = 'board-test-token';

/** A guard as an app would write one: the request must carry the operator's token (header, or the cookie a browser test sets). */
@Injectable()
export class BoardTokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const headers = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers;
    return headers[BOARD_TOKEN_HEADER] === BOARD_TOKEN || (headers.cookie ?? '').split(/;\s*/).includes(`board_token=${BOARD_TOKEN}`);
  }
}

/** One answer of the board: status, headers and HTML. */
export interface BoardAnswer {
  status: number;
  headers: Headers;
  html: string;
}

/**
 * A browser-like client of the board: it keeps the CSRF cookie the board sets, sends the guard's
 * token, and posts forms as a browser of the board's own origin would.
 */
export class BoardClient {
  private cookie = '';

  constructor(
    private readonly origin: string,
    private readonly token: string | null = BOARD_TOKEN,
  ) {}

  async get(path: string): Promise<BoardAnswer> {
    return this.answer(await fetch(this.origin + path, { headers: this.headers(), redirect: 'manual' }));
  }

  /** POSTs `fields` as a form, with `extra` headers (e.g. another Origin). */
  async post(path: string, fields: [string, string][], extra: Record<string, string> = {}): Promise<BoardAnswer> {
    const body = new URLSearchParams(fields).toString();
    const headers = { ...this.headers(), 'content-type': 'application/x-www-form-urlencoded', origin: this.origin, ...extra };
    return this.answer(await fetch(this.origin + path, { method: 'POST', headers, body, redirect: 'manual' }));
  }

  /** Submits the confirmation form of a confirm page as shown: its hidden fields, token included. */
  async submitConfirmation(page: BoardAnswer, base: string): Promise<BoardAnswer> {
    return this.post(`${base}/actions`, hiddenFields(page.html));
  }

  private headers(): Record<string, string> {
    return { ...(this.token ? { [BOARD_TOKEN_HEADER]: this.token } : {}), ...(this.cookie ? { cookie: this.cookie } : {}) };
  }

  private async answer(response: Response): Promise<BoardAnswer> {
    const setCookie = response.headers.get('set-cookie');
    if (setCookie) this.cookie = setCookie.split(';')[0];
    return { status: response.status, headers: response.headers, html: await response.text() };
  }
}

/** The hidden inputs of the page's POST form, in order, unescaped. */
export function hiddenFields(html: string): [string, string][] {
  const form = /<form method="post"[\s\S]*?<\/form>/.exec(html)?.[0] ?? '';
  return [...form.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)"\s*\/?>/g)].map(([, name, value]) => [unescape(name), unescape(value)]);
}

function unescape(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39|#96);/g, (_, entity: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", '#96': '`' })[entity]!);
}
