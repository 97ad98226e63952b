import { OutboxError } from './outbox.error';

/**
 * With `awaitStandby`, no named standby confirmed in time that it holds a claimed batch's rows
 * (it lags, is disconnected, or the database role cannot read its position). The batch is given
 * back unattempted and claimed again at the next poll: a standby outage costs no attempts.
 */
export class StandbyLagError extends OutboxError {}
