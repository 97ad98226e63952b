import { boardHref, html, SafeHtml } from '../html';

/** What every page needs to know of the board it belongs to. */
export interface BoardView {
  /** The board's path as the browser sees it (global prefix included), without a trailing slash. */
  base: string;
  title: string;
  readOnly: boolean;
  /** Characters of a payload, headers or error shown before the rest is cut. */
  displayLimit: number;
  /** The CSRF token the page's forms carry. */
  csrfToken: string;
}

/** A whole page: the stylesheet the board serves itself (no inline style, no script, nothing from elsewhere), its navigation and `body`. */
export function layout(view: BoardView, heading: string, body: SafeHtml): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>${heading} · ${view.title}</title>
        <link rel="stylesheet" href="${boardHref(view.base, 'assets/board.css')}" />
        <link rel="icon" href="${boardHref(view.base, 'assets/icon.svg')}" />
      </head>
      <body>
        <header>
          <strong>${view.title}</strong>
          <nav>
            <a href="${boardHref(view.base, '')}">Overview</a>
            <a href="${boardHref(view.base, 'messages')}">Outbox messages</a>
            <a href="${boardHref(view.base, 'messages', { inbox: '1' })}">Inbox deliveries</a>
          </nav>
          ${view.readOnly ? html`<span class="badge">read-only</span>` : ''}
        </header>
        <main>
          <h1>${heading}</h1>
          ${body}
        </main>
      </body>
    </html> `.text;
}

/** A time as operators read it: ISO 8601 in UTC; a dash for none. */
export function shownTime(time: Date | null | undefined): string {
  return time ? time.toISOString() : '—';
}

/** A duration in milliseconds as a short human figure. */
export function shownDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 7_200_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}
