/** The attribute keys of the library's metrics. */
export const TABLE = 'outbox.table';
export const TRANSPORT = 'outbox.transport';
export const CONSUMER = 'messaging.consumer.group.name';
export const STATUS = 'outbox.status';
/** Set only on a named outbox's metrics: the default outbox's keep the attributes they always had. */
export const OUTBOX_NAME = 'outbox.name';
