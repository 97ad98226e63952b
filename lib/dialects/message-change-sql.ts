import { ChangeBatch, ChangeBatchOutcome, CHANGEABLE_STATUSES, MessageChange, MessageFilter } from '../engine/state-table';
import { MessageStatus } from '../message/message-status';
import { compareIds } from './compare-ids';
import { MessageScope, requeuedStatus } from './message-ref-sql';
import { filterConditions, FilterFlavour, SqlParams } from './message-filter-sql';
import { UNFINISHED_SQL } from './status-sql';

const { PENDING, ABANDONED } = MessageStatus;

/**
 * The statuses a change touches among those the filter asks for: a filter narrows a change, never
 * widens it. Empty when the filter asks only for statuses the change never touches.
 */
export function changedStatuses(change: MessageChange, requested: readonly MessageStatus[] | undefined): MessageStatus[] {
  const changeable = CHANGEABLE_STATUSES[change];
  return requested ? changeable.filter((status) => requested.includes(status)) : [...changeable];
}

/** The SET list of an UPDATE making the change (all but `purge`, a DELETE); `now` is the dialect's clock. */
export function changeAssignments(change: Exclude<MessageChange, 'purge'>, scope: MessageScope, now: string): string {
  switch (change) {
    case 'requeue':
      return `status = '${requeuedStatus(scope)}', attempts = 0, next_attempt_at = ${now}`;
    case 'abandon':
      return `status = '${ABANDONED}', processed_at = ${now}`;
    case 'replay':
      // A fresh row in all but its id and message id; the claim columns of its last send go.
      return `status = '${PENDING}', attempts = 0, next_attempt_at = ${now}, processed_at = NULL, claim_token = NULL, claimed_at = NULL, claimed_by = NULL`;
  }
}

/** What differs between databases in the statement choosing a batch's rows. */
export interface CandidateSpelling {
  /** The quoted table name. */
  table: string;
  /**
   * "No unfinished row of c's key comes after c", for the replay rule. Default: one probe
   * PostgreSQL and SQLite answer from their partial ordering index.
   */
  noLaterUnfinished?: string;
}

/**
 * The rows of one batch of `change`, aliased `c`, selecting `columns`: those matching `filter` with
 * a status the change touches (`statuses`, from `changedStatuses`), in the batch's id range,
 * lowest ids first. The caller appends a locking clause where it has one. Parameters are added in
 * the order they appear in the text, as positional `?` placeholders need.
 */
export function changeCandidatesSql(
  spelling: CandidateSpelling,
  scope: MessageScope,
  change: MessageChange,
  filter: MessageFilter,
  statuses: MessageStatus[],
  batch: ChangeBatch,
  columns: string,
  params: SqlParams,
  flavour: FilterFlavour,
): string {
  const after = batch.after === null ? '' : `c.id > ${params.add(flavour.id(batch.after))} AND `;
  const through = params.add(flavour.id(batch.through));
  const conditions = filterConditions({ ...filter, statuses }, 'c.', params, flavour);
  const keyRule = change === 'replay' ? ` AND ${replayKeyRule(spelling, scope)}` : '';
  return `SELECT ${columns} FROM ${spelling.table} AS c
    WHERE ${after}c.id <= ${through} AND ${conditions}${keyRule}
    ORDER BY c.id LIMIT ${params.add(batch.size)}`;
}

/**
 * When a DONE row `c` with an ordering key may be sent again: only while no later row of its key
 * (and consumer) is unfinished; a row refused stays DONE. A replayed row becomes the earliest
 * unfinished row of its key: it would go out beside a later row in flight, or hold back a waiting
 * one, which would then go out before a DONE row between the two that a later batch replays. A
 * key's later DONE rows are not looked at (PostgreSQL and SQLite index only unfinished rows by
 * key): the replayed row is sent after them, unless the replay selects them too.
 */
function replayKeyRule(spelling: CandidateSpelling, scope: MessageScope): string {
  const noLaterUnfinished =
    spelling.noLaterUnfinished ??
    `NOT EXISTS (SELECT 1 FROM ${spelling.table} AS u
       WHERE u.ordering_key = c.ordering_key${scope ? ` AND u.${scope} = c.${scope}` : ''} AND u.${UNFINISHED_SQL} AND u.id > c.id)`;
  return `(c.ordering_key IS NULL OR ${noLaterUnfinished})`;
}

/** A batch's outcome from the ids it changed, where those are all the rows it reached (PostgreSQL, SQLite). */
export function outcomeOfChanged(ids: string[]): ChangeBatchOutcome {
  return { changed: ids.length, lastId: highestId(ids) };
}

/** The highest of ids given as decimal text; null for none. */
export function highestId(ids: string[]): string | null {
  return ids.reduce<string | null>((highest, id) => (highest === null || compareIds(id, highest) > 0 ? id : highest), null);
}
