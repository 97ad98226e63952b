import { ListedInboxMessage, ListedOutboxMessage, MessagePage } from '../../admin/message-filter';
import { MessageStatus } from '../../message/message-status';
import { BoardFilter } from '../board-filter';
import { boardHref, html, SafeHtml } from '../html';
import { BoardView, layout, shownTime } from './layout';
import { shortText } from './overview-page';

/** The changes a filter can make, with their labels; replay is the outbox's only. */
const FILTER_ACTIONS = [
  ['requeue', 'Requeue…'],
  ['abandon', 'Abandon…'],
  ['replay', 'Replay…'],
  ['purge', 'Purge…'],
] as const;

/** One page of a listing, newest or oldest first, by keyset: the filter form, the rows, the next page's link and the filter's actions. */
export function listPage(
  view: BoardView,
  filter: BoardFilter,
  order: 'newest' | 'oldest',
  page: MessagePage<ListedOutboxMessage | ListedInboxMessage>,
): string {
  const inbox = filter.table === 'inbox';
  const next =
    page.next === null ? '' : html`<a class="next" href="${boardHref(view.base, 'messages', { ...filter.query, order, after: page.next })}">Next page →</a>`;
  return layout(
    view,
    inbox ? 'Inbox deliveries' : 'Outbox messages',
    html`${filterForm(view, filter, order)} ${view.readOnly ? '' : actionLinks(view, filter)}
      <table class="messages">
        <thead>
          <tr>
            <th>Id</th>
            <th>Message id</th>
            <th>Type</th>
            <th>Business key</th>
            <th>${inbox ? 'Consumer' : 'Transport'}</th>
            <th>Status</th>
            <th>Attempts</th>
            <th>Created</th>
            <th>Next attempt</th>
            <th>Last error</th>
          </tr>
        </thead>
        <tbody>
          ${
            page.messages.length === 0
              ? html`<tr>
                  <td colspan="10">No message matches.</td>
                </tr>`
              : ''
          }
          ${page.messages.map((message) => {
            const scope = 'consumer' in message ? message.consumer : message.transport;
            const detail = boardHref(view.base, 'message', {
              id: message.messageId,
              ...('consumer' in message ? { inbox: '1', consumer: message.consumer } : {}),
            });
            return html`<tr class="row">
              <td>${message.id}</td>
              <td><a href="${detail}">${message.messageId}</a></td>
              <td>${message.type}</td>
              <td>${message.bizKey ?? ''}</td>
              <td>${scope}</td>
              <td class="status ${message.status}">${message.status}</td>
              <td>${message.attempts}</td>
              <td>${shownTime(message.createdAt)}</td>
              <td>${shownTime(message.nextAttemptAt)}</td>
              <td class="error">${shortText(message.lastError)}</td>
            </tr>`;
          })}
        </tbody>
      </table>
      ${next}`,
  );
}

function filterForm(view: BoardView, filter: BoardFilter, order: string): SafeHtml {
  const inbox = filter.table === 'inbox';
  const chosen = new Set(filter.query.status ?? []);
  const text = (name: string, label: string, placeholder = '') => {
    const value = filter.query[name];
    return html`<label>${label} <input name="${name}" value="${typeof value === 'string' ? value : ''}" placeholder="${placeholder}" /></label>`;
  };
  return html`<form class="filter" method="get" action="${boardHref(view.base, 'messages')}">
    ${inbox ? html`<input type="hidden" name="inbox" value="1" />` : ''}
    <fieldset>
      <legend>Status</legend>
      ${Object.values(MessageStatus).map(
        (status) => html`<label><input type="checkbox" name="status" value="${status}" ${chosen.has(status) ? html` checked` : ''} /> ${status}</label>`,
      )}
    </fieldset>
    ${text('type', 'Type')} ${text('biz-key', 'Business key')} ${inbox ? text('consumer', 'Consumer') : text('transport', 'Transport')}
    ${text('error-contains', 'Error contains')} ${text('created-after', 'Created after', '2024-03-01T12:00:00Z')}
    ${text('created-before', 'Created before', '2024-03-01')}
    <label
      >Order
      <select name="order">
        <option value="newest" ${order === 'newest' ? html` selected` : ''}>newest first</option>
        <option value="oldest" ${order === 'oldest' ? html` selected` : ''}>oldest first</option>
      </select></label
    >
    <button type="submit">Filter</button>
  </form>`;
}

function actionLinks(view: BoardView, filter: BoardFilter): SafeHtml {
  const actions = FILTER_ACTIONS.filter(([action]) => filter.table === 'outbox' || action !== 'replay');
  return html`<p class="actions">
    With the messages this filter selects:
    ${actions.map(([action, label]) => html`<a class="button" href="${boardHref(view.base, 'confirm', { ...filter.query, action })}">${label}</a>`)}
  </p>`;
}
