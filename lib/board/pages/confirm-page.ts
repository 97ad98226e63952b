import { CSRF_FIELD } from '../csrf';
import { boardHref, html } from '../html';
import { BoardView, layout } from './layout';

/** What an action will do, as its confirmation shows it before anything changes. */
export interface PendingAction {
  action: 'requeue' | 'abandon' | 'replay' | 'purge';
  /** How many rows it would reach now. */
  count: number;
  /** The table, and the message or the filter, in words. */
  scope: string;
  /** The fields the POST carries to repeat exactly this selection. */
  fields: Record<string, string | string[]>;
  /** Where "Cancel" goes. */
  back: string;
}

const VERBS: Record<PendingAction['action'], [string, string]> = {
  requeue: ['Requeue', 'sent (or processed) again with a fresh attempt budget'],
  abandon: ['Abandon', 'given up on: never sent or processed'],
  replay: ['Replay', 'sent again under their own message ids'],
  purge: ['Purge', 'deleted'],
};

/** The confirmation of an action: the count first, then a POST form carrying the same selection and the CSRF token. */
export function confirmPage(view: BoardView, pending: PendingAction): string {
  const [verb, effect] = VERBS[pending.action];
  const hidden = Object.entries(pending.fields).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value]).map((item) => html`<input type="hidden" name="${name}" value="${item}" />`),
  );
  const body =
    pending.count === 0
      ? html`<p>No message of ${pending.scope} can be changed this way now: nothing to do.</p>
          <p><a href="${pending.back}">Back</a></p>`
      : html`<p class="confirm">${verb} <strong class="count">${pending.count}</strong> message(s) of ${pending.scope}? They will be ${effect}.</p>
          <form method="post" action="${boardHref(view.base, 'actions')}">
            <input type="hidden" name="${CSRF_FIELD}" value="${view.csrfToken}" />
            <input type="hidden" name="action" value="${pending.action}" />
            ${hidden}
            <button type="submit" class="danger">${verb} ${pending.count} message(s)</button>
            <a href="${pending.back}">Cancel</a>
          </form>`;
  return layout(view, `${verb}: confirm`, body);
}

/** What an action did. */
export function resultPage(view: BoardView, text: string, back: string): string {
  return layout(
    view,
    'Done',
    html`<p class="result">${text}</p>
      <p><a href="${back}">Back</a></p>`,
  );
}

/** A refusal or failure, said plainly; `detail` is escaped like everything else. */
export function errorPage(view: BoardView, heading: string, detail: string): string {
  return layout(
    view,
    heading,
    html`<p class="refused">${detail}</p>
      <p><a href="${boardHref(view.base, '')}">Overview</a></p>`,
  );
}
