import { StartedNotes } from '../dialects/inbox-dialect';

/** What a transactional inbox row says while a redelivery's handler runs, and when the attempts ran out that way. */
export const STARTED_NOTES: StartedNotes = {
  started:
    'the handler started on a redelivery and has not finished; if this stays, its process died while running it (process.exit, out of memory, a native crash, a kill)',
  gaveUp:
    'gave up without running the handler again: its attempts are used up and the last one started and never finished, so its process probably died while running it (process.exit, out of memory, a native crash, a kill)',
};
