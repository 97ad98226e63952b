import type { EntitySchemaColumnOptions, ValueTransformer } from 'typeorm';
import type { MessageRecord } from './message-records';

/*
 * The columns of the read models. Types are ones every supported driver accepts (TypeORM checks
 * them per driver when it builds metadata) and that read the same everywhere; they never reach
 * DDL, which the dialects own. Lengths are left out for that reason: the DDL is their only source.
 *
 * - ids: `bigint`, which pg and mysql2 (under TypeORM's settings) return as text and SQLite as a
 *   number: read as text, so that every id compares and prints alike.
 * - JSON: `json`, which TypeORM's drivers parse where the driver returns text (MariaDB/MySQL
 *   LONGTEXT, SQLite text) and leave alone where it returns the parsed value (pg's json). A
 *   transformer parsing strings could not tell a JSON document's text from a payload that is
 *   itself a string, which pg hands over already parsed.
 * - times: `Date`, which TypeORM converts right on PostgreSQL and SQLite; MariaDB/MySQL's need a
 *   transformer fitted to the DataSource (see `record-times.ts`).
 */

/** Ids as text, whatever the driver returns. */
const ID_AS_TEXT: ValueTransformer = {
  from: (value: unknown) => (value === null || value === undefined ? value : String(value)),
  to: (value: unknown) => value,
};

/** The properties of the time columns, whose transformer is fitted to each DataSource. */
export const TIME_PROPERTIES: ReadonlySet<string> = new Set<keyof MessageRecord>(['nextAttemptAt', 'claimedAt', 'createdAt', 'processedAt']);

/** A text column (varchar or text in the DDL: the type read back is the same). */
export const textColumn = (name: string, nullable = false): EntitySchemaColumnOptions => ({ name, type: 'varchar', nullable });
const time = (name: string, nullable = false): EntitySchemaColumnOptions => ({ name, type: Date, nullable });

/** The columns both tables begin with, but `payload`, whose type differs. */
export const MESSAGE_COLUMNS = {
  id: { name: 'id', type: 'bigint', primary: true, transformer: ID_AS_TEXT },
  messageId: textColumn('message_id'),
  type: textColumn('message_type'),
  bizKey: textColumn('biz_key', true),
  orderingKey: textColumn('ordering_key', true),
  exchange: textColumn('exchange'),
  routingKey: textColumn('routing_key'),
  headers: { name: 'headers', type: 'json' },
} satisfies Partial<Record<keyof MessageRecord, EntitySchemaColumnOptions>>;

/** The state-machine columns both tables end with. */
export const STATE_COLUMNS = {
  status: textColumn('status'),
  attempts: { name: 'attempts', type: 'int' },
  maxAttempts: { name: 'max_attempts', type: 'int' },
  nextAttemptAt: time('next_attempt_at'),
  claimedAt: time('claimed_at', true),
  claimToken: textColumn('claim_token', true),
  claimedBy: textColumn('claimed_by', true),
  lastError: { name: 'last_error', type: 'text', nullable: true },
  createdAt: time('created_at'),
  processedAt: time('processed_at', true),
} satisfies Partial<Record<keyof MessageRecord, EntitySchemaColumnOptions>>;
