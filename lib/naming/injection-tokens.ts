/** Injection token of the validated `OutboxModuleOptions`. */
export const OUTBOX_OPTIONS = Symbol('OUTBOX_OPTIONS');
/** Injection token of the default `OutboxTransport`: the one that sends messages published without a transport. */
export const OUTBOX_TRANSPORT = Symbol('OUTBOX_TRANSPORT');
/** Injection token of `OutboxTransports`: every configured transport, by name, with its lane's settings. */
export const OUTBOX_TRANSPORTS = Symbol('OUTBOX_TRANSPORTS');

/** Injection token of the transport named `name` (one per lane). */
export function laneTransportToken(name: string): string {
  return `nestjs-outbox:transport:${name}`;
}
/** Injection token of the `OutboxDialect` bound to the outbox table. */
export const OUTBOX_DIALECT = Symbol('OUTBOX_DIALECT');
/** Injection token of the TypeORM DataSource that holds the outbox table. */
export const OUTBOX_DATA_SOURCE = Symbol('OUTBOX_DATA_SOURCE');
/** Injection token of the process-unique identity written to `claimed_by`. */
export const OUTBOX_INSTANCE_ID = Symbol('OUTBOX_INSTANCE_ID');
/** Injection token of the `InboxDialect` bound to the inbox table. */
export const INBOX_DIALECT = Symbol('INBOX_DIALECT');
/**
 * Injection token of the DataSource the dispatcher, the deferred inbox worker and maintenance run
 * their own statements on: a small pool of their own, or the application's DataSource.
 */
export const OUTBOX_WORKER_DATA_SOURCE = Symbol('OUTBOX_WORKER_DATA_SOURCE');
/** Injection token of the `StandbyGate` of `awaitStandby`, or null when the option is off. */
export const OUTBOX_STANDBY_GATE = Symbol('OUTBOX_STANDBY_GATE');
/** Injection token of the `DatabaseDialect` of the outbox's DataSource (tables created when `synchronize` is on). */
export const DATABASE_DIALECT = Symbol('DATABASE_DIALECT');
/** Injection token of the names of the outbox and inbox tables (`TableNames`). */
export const OUTBOX_TABLE_NAMES = Symbol('OUTBOX_TABLE_NAMES');
/** Injection token of the outbox's `InboxSubscriptions`: which `@InboxHandler()` consumers the broker cancelled. */
export const INBOX_SUBSCRIPTIONS = Symbol('INBOX_SUBSCRIPTIONS');

/** Injection token, inside one `OutboxModule`, of its `OutboxAdmin`, whatever token the module exports it under. */
export const OUTBOX_ADMIN = Symbol('OUTBOX_ADMIN');
