import { CHANGEABLE_STATUSES } from '../../engine/state-table';
import { MessageDetail } from '../../engine/message-views';
import { boardHref, cutForDisplay, html, SafeHtml } from '../html';
import { BoardView, layout, shownTime } from './layout';

/** The changes one message can have from its page: the admin's actions by id. */
const MESSAGE_ACTIONS = ['requeue', 'abandon'] as const;

/** One message whole: its fields, times, payload, headers and last error, each escaped and cut to the display limit. */
export function detailPage(view: BoardView, message: MessageDetail): string {
  const inbox = message.consumer !== undefined;
  const ref = { id: message.messageId, ...(inbox ? { inbox: '1', consumer: message.consumer! } : {}) };
  const fields: [string, unknown][] = [
    ['Row id', message.id],
    ['Message id', message.messageId],
    ['Type', message.type],
    ['Status', message.status],
    ['Attempts', `${message.attempts} of ${message.maxAttempts}`],
    ['Business key', message.bizKey ?? '—'],
    ['Ordering key', message.orderingKey ?? '—'],
    inbox ? ['Consumer', message.consumer] : ['Transport', message.transport],
    ['Exchange', message.exchange],
    ['Routing key', message.routingKey],
    ...(inbox ? [] : ([['Destination', message.destination || '—']] as [string, unknown][])),
    ['Created', shownTime(message.createdAt)],
    ['Next attempt', shownTime(message.nextAttemptAt)],
    ['Claimed', message.claimedAt ? `${shownTime(message.claimedAt)} by ${message.claimedBy ?? 'unknown'}` : '—'],
    ['Processed', shownTime(message.processedAt)],
  ];
  const actions = MESSAGE_ACTIONS.filter((action) => CHANGEABLE_STATUSES[action].includes(message.status));
  return layout(
    view,
    `${inbox ? 'Inbox delivery' : 'Outbox message'} ${message.messageId}`,
    html`<dl class="fields">
        ${fields.map(
          ([name, value]) =>
            html`<dt>${name}</dt>
              <dd>${value}</dd>`,
        )}
      </dl>
      ${view.readOnly || actions.length === 0 ? '' : html`<p class="actions">${actions.map((action) => html`<a class="button" href="${boardHref(view.base, 'confirm', { ...ref, action })}">${action === 'requeue' ? 'Requeue…' : 'Abandon…'}</a>`)}</p>`}
      <h2>Last error</h2>
      ${message.lastError === null ? html`<p>None.</p>` : shownText(view, message.lastError, false)}
      <h2>Payload</h2>
      ${shownText(view, message.payload, true)}
      <h2>Headers</h2>
      ${shownText(view, message.headers, true)}`,
  );
}

/** Stored text in a `<pre>`: JSON indented when it parses, cut to the display limit and said to be. */
function shownText(view: BoardView, text: string, json: boolean): SafeHtml {
  const readable = json ? indentedJson(text, view.displayLimit) : text;
  const { shown, cut } = cutForDisplay(readable, view.displayLimit);
  return html`<pre class="stored">${shown}</pre>
    ${cut ? html`<p class="cut">Cut: the first ${shown.length} of ${readable.length} characters are shown.</p>` : ''}`;
}

/** JSON indented for reading; text that is not JSON (an inbox body), or too long to be worth parsing, as it is. */
function indentedJson(text: string, limit: number): string {
  if (text.length > limit * 4) return text;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
