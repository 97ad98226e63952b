import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { DatabaseDialect } from '../../lib/dialects/database-dialect';
import { InboxDialect } from '../../lib/dialects/inbox-dialect';
import { archiveTableName, TableKind } from '../../lib/naming/index-names';
import { OutboxDialect } from '../../lib/dialects/outbox-dialect';
import { qualifiedTable, resolveDialect } from '../../lib/dialects/resolve-dialect';
import { ArchiveTable, StateTable } from '../../lib/engine/state-table';
import { MessageStatus } from '../../lib/message/message-status';
import { prepareArchiveTablesAtStartup } from '../../lib/schema/archive-tables-at-startup';
import { createTablesAtStartup } from '../../lib/schema/create-tables-at-startup';
import { TABLE_COLUMNS } from '../../lib/schema/table-columns';
import { TestDatabase } from '../support/database';
import { inboxRow, outboxRow } from '../support/dialect-rows';
import { toDate } from '../support/sql-values';

/*
 * The tables the dialect contract drives, on whichever database the jest project selects: rows
 * seeded in any state through the dialect's own inserts, and read back as plain values.
 */

// Start-up creation logs at debug level.
Logger.overrideLogger(['error', 'warn']);

/** The contract's own table names, beside nothing else of the suite's. */
export const TABLE_NAMES: Record<TableKind, string> = { outbox: 'dc_outbox', inbox: 'dc_inbox' };

/** The lanes rows are seeded in: outbox transports, inbox consumers. */
export const LANES: Record<TableKind, readonly [string, string]> = { outbox: ['default', 'webhooks'], inbox: ['consumer-a', 'consumer-b'] };

export interface ContractTables {
  database: TestDatabase;
  dataSource: DataSource;
  dialect: DatabaseDialect;
  outbox: OutboxDialect;
  inbox: InboxDialect;
  archives: Record<TableKind, ArchiveTable>;
}

/** Opens the database with both tables and their archives, as start-up creation makes them. */
export async function openContractTables(database: TestDatabase): Promise<ContractTables> {
  await database.reset();
  const dataSource = await new DataSource(database.dataSourceOptions({ poolSize: 4 })).initialize();
  const dialect = await resolveDialect(dataSource);
  await createTablesAtStartup(dataSource, dialect, TABLE_NAMES);
  await prepareArchiveTablesAtStartup(dataSource, dialect, TABLE_NAMES);
  const quoted = (name: string) => qualifiedTable(dataSource, name);
  return {
    database,
    dataSource,
    dialect,
    outbox: dialect.outbox(quoted(TABLE_NAMES.outbox)),
    inbox: dialect.inbox(quoted(TABLE_NAMES.inbox)),
    archives: {
      outbox: { quoted: quoted(archiveTableName(TABLE_NAMES.outbox)), columns: TABLE_COLUMNS.outbox },
      inbox: { quoted: quoted(archiveTableName(TABLE_NAMES.inbox)), columns: TABLE_COLUMNS.inbox },
    },
  };
}

export function stateTable(t: ContractTables, kind: TableKind): StateTable {
  return kind === 'outbox' ? t.outbox : t.inbox;
}

/** Portable SQL (see `TestDatabase.sql`) on the contract's DataSource: no connection of its own per statement. */
export function sql<T = any>(t: ContractTables, text: string, params: unknown[] = []): Promise<T[]> {
  return t.database.sqlOn<T>(t.dataSource.manager, text, params);
}

/** Empties both tables and both archives. */
export async function clearTables(t: ContractTables): Promise<void> {
  for (const name of Object.values(TABLE_NAMES)) {
    await sql(t, `DELETE FROM {${name}}`);
    await sql(t, `DELETE FROM {${archiveTableName(name)}}`);
  }
}

/** The database's clock now. */
export async function databaseNow(t: ContractTables): Promise<Date> {
  const [row] = await sql(t, `SELECT ${t.database.timeAgo(0)} AS now`);
  return toDate(row.now)!;
}

/**
 * A row in a given state. Times are relative to the database clock at seeding: `...AgoMs` in the
 * past, `dueInMs` from now (negative: already due). Unset claim columns stay NULL.
 */
export interface RowSpec {
  status?: MessageStatus;
  attempts?: number;
  maxAttempts?: number;
  type?: string;
  bizKey?: string | null;
  orderingKey?: string | null;
  /** The transport (outbox) or consumer (inbox); the first of `LANES` by default. */
  lane?: string;
  lastError?: string | null;
  createdAgoMs?: number;
  dueInMs?: number;
  processedAgoMs?: number | null;
  claimedAgoMs?: number | null;
  claimToken?: string | null;
  claimedBy?: string | null;
}

/** A row as stored, read back in one JavaScript type per column whatever the driver. */
export interface StoredRow {
  id: string;
  messageId: string;
  lane: string;
  type: string;
  bizKey: string | null;
  orderingKey: string | null;
  status: MessageStatus;
  attempts: number;
  maxAttempts: number;
  lastError: string | null;
  claimToken: string | null;
  claimedBy: string | null;
  claimedAt: Date | null;
  nextAttemptAt: Date;
  processedAt: Date | null;
  createdAt: Date;
}

/**
 * Inserts rows through the dialect (`insert` in one transaction for the outbox, `insertPending`
 * for the inbox), then sets each one's state; returns them as stored, in id order.
 */
export async function seed(t: ContractTables, kind: TableKind, specs: RowSpec[]): Promise<StoredRow[]> {
  const messageIds: string[] = specs.map(() => randomUUID());
  const base = (spec: RowSpec, i: number) => ({
    messageId: messageIds[i],
    type: spec.type ?? 'contract.event',
    bizKey: spec.bizKey ?? null,
    orderingKey: spec.orderingKey ?? null,
    maxAttempts: spec.maxAttempts ?? 5,
  });
  if (kind === 'outbox') {
    await t.dataSource.transaction(async (manager) => {
      for (const [i, spec] of specs.entries()) {
        if (!(await t.outbox.insert(manager, outboxRow({ ...base(spec, i), transport: spec.lane ?? LANES.outbox[0] }))))
          throw new Error('seed: duplicate outbox row');
      }
    });
  } else {
    for (const [i, spec] of specs.entries()) {
      if (!(await t.inbox.insertPending(t.dataSource, inboxRow({ ...base(spec, i), consumer: spec.lane ?? LANES.inbox[0] }))))
        throw new Error('seed: duplicate inbox row');
    }
  }
  const time = (agoMs: number | null | undefined) => (agoMs === null || agoMs === undefined ? 'NULL' : t.database.timeAgo(agoMs));
  for (const [i, spec] of specs.entries()) {
    await sql(
      t,
      `UPDATE {${TABLE_NAMES[kind]}} SET status = ?, attempts = ?, last_error = ?, claim_token = ?, claimed_by = ?,
         created_at = ${time(spec.createdAgoMs ?? 0)}, next_attempt_at = ${time(-(spec.dueInMs ?? -1_000))},
         processed_at = ${time(spec.processedAgoMs)}, claimed_at = ${time(spec.claimedAgoMs)}
       WHERE message_id = ?`,
      [spec.status ?? MessageStatus.PENDING, spec.attempts ?? 0, spec.lastError ?? null, spec.claimToken ?? null, spec.claimedBy ?? null, messageIds[i]],
    );
  }
  const stored = await readRows(t, kind);
  const order = new Map(messageIds.map((id, i) => [id, i]));
  return stored.filter((row) => order.has(row.messageId));
}

/** Every row of the table, in id order. */
export async function readRows(t: ContractTables, kind: TableKind): Promise<StoredRow[]> {
  const lane = kind === 'outbox' ? 'transport' : 'consumer';
  const rows = await sql(
    t,
    `SELECT id, message_id, ${lane} AS lane, message_type, biz_key, ordering_key, status, attempts, max_attempts, last_error,
            claim_token, claimed_by, claimed_at, next_attempt_at, processed_at, created_at
     FROM {${TABLE_NAMES[kind]}} ORDER BY id`,
  );
  return rows.map((r) => ({
    id: String(r.id),
    messageId: r.message_id,
    lane: r.lane,
    type: r.message_type,
    bizKey: r.biz_key,
    orderingKey: r.ordering_key,
    status: r.status,
    attempts: Number(r.attempts),
    maxAttempts: Number(r.max_attempts),
    lastError: r.last_error,
    claimToken: r.claim_token,
    claimedBy: r.claimed_by,
    claimedAt: toDate(r.claimed_at),
    nextAttemptAt: toDate(r.next_attempt_at)!,
    processedAt: toDate(r.processed_at),
    createdAt: toDate(r.created_at)!,
  }));
}

/** Rows by id. */
export async function rowsById(t: ContractTables, kind: TableKind): Promise<Map<string, StoredRow>> {
  return new Map((await readRows(t, kind)).map((row) => [row.id, row]));
}

/** Every column of the table's rows as the driver returns them, in id order: for comparing a row with its archived copy. */
export async function rawRows(t: ContractTables, kind: TableKind, table: string = TABLE_NAMES[kind]): Promise<Record<string, unknown>[]> {
  return sql(t, `SELECT ${TABLE_COLUMNS[kind].join(', ')} FROM {${table}} ORDER BY id`);
}

/** Claims up to `limit` due rows of `lane` (default: the first lane) under `claimToken`. */
export async function claim(t: ContractTables, kind: TableKind, limit: number, claimToken: string, lane?: string) {
  return kind === 'outbox'
    ? t.outbox.claim(t.dataSource, limit, claimToken, 'contract-instance', lane ?? LANES.outbox[0])
    : t.inbox.claim(t.dataSource, [lane ?? LANES.inbox[0]], limit, claimToken, 'contract-instance');
}
