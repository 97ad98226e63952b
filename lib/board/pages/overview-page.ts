import { OutboxActivity, OutboxStats, TableStats } from '../../admin/outbox-stats';
import { ParkedKey } from '../../engine/message-views';
import { MessageStatus } from '../../message/message-status';
import { boardHref, cutForDisplay, html, SafeHtml } from '../html';
import { BoardView, layout, shownDuration, shownTime } from './layout';

const STATUSES = Object.values(MessageStatus);

/** What the overview shows, all read from the database. */
export interface Overview {
  stats: OutboxStats;
  parkedKeys: ParkedKey[];
  parkedInboxKeys: ParkedKey[];
  activity: OutboxActivity;
  /** Length of the activity window, and of each of its slices. */
  windowMs: number;
}

/** The overview: counts, lag and oldest due per table, transport and consumer; parked keys; the last hour's activity. */
export function overviewPage(view: BoardView, overview: Overview): string {
  const { stats } = overview;
  const manual = stats.outbox.counts.MANUAL_REQUIRED + stats.inbox.counts.MANUAL_REQUIRED;
  return layout(
    view,
    'Overview',
    html`<p class="${manual > 0 ? 'alert' : 'calm'}">
        ${manual > 0 ? html`<a href="${boardHref(view.base, 'messages', { status: 'MANUAL_REQUIRED' })}">${stats.outbox.counts.MANUAL_REQUIRED} outbox message(s)</a> and <a href="${boardHref(view.base, 'messages', { status: 'MANUAL_REQUIRED', inbox: '1' })}">${stats.inbox.counts.MANUAL_REQUIRED} inbox delivery(ies)</a> need an operator (MANUAL_REQUIRED).` : 'Nothing needs an operator: no message is MANUAL_REQUIRED.'}
        Counted by the database at ${shownTime(stats.at)}.
      </p>
      <h2>Outbox</h2>
      ${countsTable(view, 'Transport', { '(all)': stats.outbox, ...stats.outbox.byTransport }, (scope) => ({ transport: scope }))}
      <h2>Inbox</h2>
      ${countsTable(view, 'Consumer', { '(all)': stats.inbox, ...stats.inbox.byConsumer }, (scope) => ({ consumer: scope, inbox: '1' }), { inbox: '1' })}
      <h2>Parked ordering keys</h2>
      ${parkedTable(view, overview.parkedKeys, overview.parkedInboxKeys)}
      <h2>The last ${shownDuration(overview.windowMs)}</h2>
      ${activityTable(overview)}`,
  );
}

function countsTable(
  view: BoardView,
  scopeName: string,
  rows: Record<string, TableStats>,
  scopeQuery: (scope: string) => Record<string, string>,
  allQuery: Record<string, string> = {},
): SafeHtml {
  return html`<table>
    <thead>
      <tr>
        <th>${scopeName}</th>
        ${STATUSES.map((status) => html`<th>${status}</th>`)}
        <th>Due</th>
        <th>Oldest due</th>
        <th>Lag</th>
      </tr>
    </thead>
    <tbody>
      ${Object.entries(rows).map(([scope, table], index) => {
        const query = index === 0 ? allQuery : scopeQuery(scope);
        return html`<tr>
          <th><a href="${boardHref(view.base, 'messages', query)}">${scope}</a></th>
          ${STATUSES.map((status) => html`<td class="${status === MessageStatus.MANUAL_REQUIRED && table.counts[status] > 0 ? 'alert' : ''}"><a href="${boardHref(view.base, 'messages', { ...query, status })}">${table.counts[status]}</a></td>`)}
          <td>${table.due}</td>
          <td>${shownTime(table.oldestDueAt)}</td>
          <td>${shownDuration(table.lagMs)}</td>
        </tr>`;
      })}
    </tbody>
  </table>`;
}

function parkedTable(view: BoardView, outbox: ParkedKey[], inbox: ParkedKey[]): SafeHtml {
  const rows = [...outbox.map((key) => ({ key, inbox: false })), ...inbox.map((key) => ({ key, inbox: true }))];
  if (rows.length === 0) return html`<p>No ordering key is held back by a MANUAL_REQUIRED message.</p>`;
  return html`<table>
    <thead>
      <tr>
        <th>Table</th>
        <th>Ordering key</th>
        <th>Consumer</th>
        <th>Head message</th>
        <th>Type</th>
        <th>Attempts</th>
        <th>Waiting behind</th>
        <th>Last error</th>
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        ({ key, inbox }) =>
          html`<tr>
            <td>${inbox ? 'inbox' : 'outbox'}</td>
            <td>${key.orderingKey}</td>
            <td>${key.consumer ?? ''}</td>
            <td>
              <a href="${boardHref(view.base, 'message', { id: key.messageId, ...(inbox ? { inbox: '1', consumer: key.consumer ?? '' } : {}) })}"
                >${key.messageId}</a
              >
            </td>
            <td>${key.type}</td>
            <td>${key.attempts}</td>
            <td>${key.waiting}</td>
            <td class="error">${shortText(key.lastError)}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function activityTable({ activity, windowMs }: Overview): SafeHtml {
  const slices = activity.outbox.done.length;
  const sliceMs = windowMs / slices;
  const max = Math.max(1, ...activity.outbox.done, ...activity.outbox.created, ...activity.inbox.done);
  const meter = (value: number) => html`<meter min="0" max="${max}" value="${value}">${value}</meter> ${value}`;
  return html`<table class="activity">
    <thead>
      <tr>
        <th>Ago</th>
        <th>Outbox: sent</th>
        <th>Outbox: published</th>
        <th>Inbox: processed</th>
        <th>Inbox: received</th>
      </tr>
    </thead>
    <tbody>
      ${activity.outbox.done.map(
        (_, index) =>
          html`<tr>
            <th>${shownDuration((slices - index) * sliceMs)} – ${index === slices - 1 ? 'now' : shownDuration((slices - index - 1) * sliceMs)}</th>
            <td>${meter(activity.outbox.done[index])}</td>
            <td>${meter(activity.outbox.created[index])}</td>
            <td>${meter(activity.inbox.done[index])}</td>
            <td>${meter(activity.inbox.created[index])}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** An error cut to a line for a table cell; the message's page shows it whole. */
export function shortText(text: string | null, limit = 160): string {
  if (text === null) return '';
  const { shown, cut } = cutForDisplay(text, limit);
  return cut ? `${shown}…` : shown;
}
