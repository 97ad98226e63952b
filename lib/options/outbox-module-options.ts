import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength } from 'class-validator';
import type { AwaitStandbyOptions } from './await-standby';
import type { OutboxMessage } from '../message/outbox-message';
import { DEFAULT_MAX_PAYLOAD_BYTES, MAX_ATTEMPTS_LIMIT, MAX_PAYLOAD_BYTES_LIMIT } from '../message/message-limits';

/** The shortest `claimLeaseMs`: the smallest share of it, the send timeout (a thirtieth), must keep its own minimum (100 ms). */
export const MIN_CLAIM_LEASE_MS = 3_000;

/** What retention does with the finished rows it takes (see `OutboxModuleOptions.retentionMode`). */
export type RetentionMode = 'delete' | 'archive';

/** The retention modes, for validation and messages. */
export const RETENTION_MODES: readonly RetentionMode[] = ['delete', 'archive'];

/**
 * Runtime options of `OutboxModule.forRoot()`/`forRootAsync()`. Every field has a default;
 * the whole object is validated at start-up and a bad value fails the boot with its name.
 * Times are in milliseconds. Optional fields are initialised to `undefined` so that every option
 * is a key of a fresh instance, which is how unknown keys are told apart.
 */
export class OutboxModuleOptions {
  /** Run the dispatcher and stuck detector in this instance. Turn off for write-only processes. */
  @IsBoolean()
  dispatcherEnabled = true;

  /**
   * Send what this process publishes straight from memory once its transaction commits: such a
   * message is inserted already claimed by this process's dispatcher, which sends it without
   * claiming it or reading it back (ordered and delayed messages, and those of a lane that is not
   * sending or is behind, go the claimed way). If the process dies before sending it, the stuck
   * detector reclaims it after one lease (`stuckReclaimAfterMs`), instead of the next poll taking it.
   * PostgreSQL only for now; elsewhere every message is claimed.
   */
  @IsBoolean()
  sendOnCommit = true;

  /**
   * Rows claimed per dispatch batch. With `dispatchConcurrency` it sets how many sends can await
   * their confirms at once: a wide window keeps the broker busy (docs/performance.md has the
   * measurements behind the default).
   */
  @IsInt()
  @Min(1)
  @Max(10_000)
  batchSize = 500;

  /** Batches a dispatcher keeps in flight at once (claim → send → settle loops). */
  @IsInt()
  @Min(1)
  @Max(64)
  dispatchConcurrency = 4;

  /**
   * Connections of the dispatcher's own pool (claims, settles, LISTEN, maintenance), so that its
   * statements never queue behind the application's transactions. Default: the dispatch
   * concurrency of every transport's lane, summed, + 2.
   * 0 shares the application's pool. SQLite always shares its one connection.
   */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100)
  workerPoolSize?: number = undefined;

  /**
   * PostgreSQL: whether the worker pool's statements (claims, settles, maintenance) wait for their
   * WAL flush. Off by default: a database crash can undo only the last fraction of a second of
   * them, which sends or processes those messages again (duplicates, never losses), while a flush
   * per claim sits between every commit and its send. Only with a pool of its own.
   */
  @IsBoolean()
  workerSynchronousCommit = false;

  /** Polling interval: the backstop when no wake-up arrives. */
  @IsInt()
  @Min(10)
  pollIntervalMs = 1_000;

  /**
   * The longest a statement of a request may wait for the database: `publish()`'s and `cancel()`'s
   * (which then throw `DatabaseTimeoutError`) and a webhook's intake (answered 503 with
   * `Retry-After`). A database that stops answering, its connections open, would otherwise hold
   * them until TCP gives up. The connection of a statement that passes it is closed, so the pool
   * never hands it out again. 0 turns the bound off. The default keeps a webhook's answer within
   * 5 s, before most senders give up.
   */
  @IsInt()
  @Min(0)
  @Max(600_000)
  statementTimeoutMs = 4_000;

  /** How long to wait for a broker confirm before the send counts as failed. */
  @IsInt()
  @Min(100)
  sendTimeoutMs = 10_000;

  /** Failed attempts after which a message goes to MANUAL_REQUIRED. A message's own `maxAttempts` has the same bounds. */
  @IsInt()
  @Min(1)
  @Max(MAX_ATTEMPTS_LIMIT)
  maxAttempts = 10;

  /**
   * Largest payload `publish()` accepts, in bytes of its UTF-8 JSON text; larger ones are refused
   * with `OutboxMessageInvalidError`. Every byte is stored and sent again on each retry. MariaDB's
   * default `max_allowed_packet` (16 MiB) caps what it can insert; RabbitMQ's default
   * `max_message_size` (128 MiB) caps the option.
   */
  @IsInt()
  @Min(1)
  @Max(MAX_PAYLOAD_BYTES_LIMIT)
  maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;

  /** First retry delay; doubles with every attempt up to `backoffMaxMs`. */
  @IsInt()
  @Min(1)
  backoffBaseMs = 1_000;

  /** Upper bound of the retry delay before jitter. */
  @IsInt()
  @Min(1)
  backoffMaxMs = 300_000;

  /** Jitter added to each delay, as a fraction of it (0.2 = up to +20%). In [0, 1]. */
  @Min(0)
  @Max(1)
  backoffJitter = 0.2;

  /**
   * The claim lease: how long a claim may go unrenewed before another instance takes it over.
   * Live instances renew their claims every `leaseRenewIntervalMs`, so this is how long a killed
   * instance's messages wait (plus at most one check interval), not a bound on a send or a
   * handler. Sets the defaults of the options that move with it: `stuckReclaimAfterMs` (the
   * lease), `stuckWarnAfterMs` (half of it), `leaseRenewIntervalMs` (a third),
   * `stuckCheckIntervalMs` (a tenth) and `sendTimeoutMs` (a third); any of them set explicitly
   * keeps its value. Unset: those keep their own defaults (a 30 s lease). At least 3,000.
   */
  @IsOptional()
  @IsInt()
  @Min(MIN_CLAIM_LEASE_MS)
  claimLeaseMs?: number = undefined;

  /** How often the stuck detector looks for claims whose lease ran out, and reports the backlog. */
  @IsInt()
  @Min(100)
  stuckCheckIntervalMs = 3_000;

  /**
   * A PROCESSING row whose claim was not renewed for this long is logged as a warning: its
   * claimant is late renewing, or dead. Keep it above `leaseRenewIntervalMs`. Default: 15 s, or
   * half of `stuckReclaimAfterMs` where that is set.
   */
  @IsInt()
  @Min(100)
  stuckWarnAfterMs = 15_000;

  /**
   * The lease: a PROCESSING row whose claim was not renewed for this long is reclaimed (its
   * claimant is presumed dead) as a failed attempt. `claimLeaseMs` sets it with the options that
   * move with it.
   */
  @IsInt()
  @Min(100)
  stuckReclaimAfterMs = 30_000;

  /**
   * How often a process renews the leases of the claims it holds (rows being sent or handled, or
   * waiting in their batch): one fenced UPDATE per claimed batch. At most half the lease, so that
   * one late renewal does not lose a claim. Default: a third of `stuckReclaimAfterMs`.
   */
  @IsOptional()
  @IsInt()
  @Min(50)
  leaseRenewIntervalMs?: number = undefined;

  /**
   * Wake dispatchers for rows other instances commit: PostgreSQL NOTIFY from publishing
   * transactions; on MySQL and MariaDB, which have no NOTIFY, a look every `wakeupProbeIntervalMs`.
   * Off: other instances' rows wait for the next poll.
   */
  @IsBoolean()
  notifyEnabled = true;

  /**
   * MySQL and MariaDB: how often each process looks for rows other processes committed (one
   * index-only query per look, `1000 / wakeupProbeIntervalMs` queries/s when idle), so that they are
   * claimed within about this long instead of at the next poll. Unused on PostgreSQL (NOTIFY).
   */
  @IsInt()
  @Min(10)
  wakeupProbeIntervalMs = 50;

  /** At most one wake-up notification per this interval per process: notifying commits serialise. */
  @IsInt()
  @Min(0)
  notifyMinIntervalMs = 250;

  /** Name of the NOTIFY channel. */
  @IsString()
  @Matches(/^[a-z_][a-z0-9_]{0,62}$/, { message: 'notifyChannel must be a lower-case SQL identifier' })
  notifyChannel = 'nestjs_outbox';

  /** Publish with the AMQP `mandatory` flag so that unroutable messages are not counted as sent. */
  @IsBoolean()
  mandatory = true;

  /**
   * Add the delivery headers `outbox-attempt` and `outbox-published-at` to every delivery (AMQP
   * headers, HTTP request headers, the `ClientProxy` envelope's `headers`). Off where no consumer
   * reads them: over RabbitMQ each costs the dispatcher about 10 µs and the broker about 15 µs of
   * CPU a message (docs/performance.md).
   */
  @IsBoolean()
  deliveryHeaders = true;

  /**
   * With `@opentelemetry/api` installed and an SDK registered: report the tables' rows by status
   * and their lag as gauges, read with one aggregate statement per table (a scan of the table) at
   * every metrics collection. The other metrics cost no statement. Turn it off in all but one
   * process of a deployment (the figures are the same from every process), or where retention
   * keeps so much history that a scan per collection is too much.
   */
  @IsBoolean()
  tableMetrics = true;

  /** Characters of the last error kept on a row. */
  @IsInt()
  @Min(100)
  @Max(10_000)
  lastErrorMaxLength = 2_000;

  /** Deferred inbox rows claimed per batch (each runs its handler in its own transaction). */
  @IsInt()
  @Min(1)
  @Max(1_000)
  inboxBatchSize = 20;

  /** Largest message body an inbox handler accepts; larger ones are rejected to MANUAL_REQUIRED. */
  @IsInt()
  @Min(1)
  inboxMaxBodyBytes = 1_048_576;

  /**
   * DONE and ABANDONED rows (outbox and inbox) older than this are deleted (or archived, see
   * `retentionMode`). This is also the inbox's dedupe window: a duplicate arriving later than
   * this is processed again. 0 keeps all.
   */
  @IsInt()
  @Min(0)
  retentionMs = 7 * 24 * 3_600_000;

  /** How often retention runs. */
  @IsInt()
  @Min(1_000)
  retentionIntervalMs = 3_600_000;

  /** Rows deleted (or archived) per retention batch, so no single statement holds locks for long. */
  @IsInt()
  @Min(1)
  @Max(100_000)
  retentionBatchSize = 1_000;

  /**
   * What retention does with the finished rows it takes: `'delete'` them, or `'archive'` them:
   * move each, with every column and the time it was archived (`archived_at`), to the table
   * `<table>_archive` beside the outbox and inbox tables, where operators can still query it.
   * Archive tables are created at start-up under the DataSource's `synchronize`; otherwise
   * `createArchiveTablesMigration()` creates them, and start-up refuses to run without them.
   * The archive grows without bound: prune it by `archived_at` as your own policy says.
   */
  @IsIn(RETENTION_MODES, { message: ({ value }) => `retentionMode must be 'delete' or 'archive', got ${JSON.stringify(value)}` })
  retentionMode: RetentionMode = 'delete';

  /**
   * PostgreSQL with asynchronous standbys: send a claimed batch (and run a deferred inbox
   * handler's batch) only once the named standbys have flushed its rows, so that a failover
   * never promotes a standby that lacks a transaction whose message went out. One wait per
   * batch; a batch no standby confirms within `timeoutMs` is given back unattempted and claimed
   * again at the next poll. Off by default (costs nothing then); needs a role that may read
   * `pg_stat_replication` positions (`pg_read_all_stats`). See docs/semantics.md.
   */
  @IsOptional()
  awaitStandby?: AwaitStandbyOptions = undefined;

  /** Written to `claimed_by`; defaults to host name and process id. */
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  instanceId?: string = undefined;

  /**
   * Retry a stored webhook or deferred delivery whose method's pipes refused it with a client
   * error (4xx, e.g. a `ValidationPipe`'s 400) like any failed attempt. Default false: the same
   * input is refused on every attempt, so it goes to MANUAL_REQUIRED at once
   * (`InputRejectedError`, with the pipe's messages in `last_error`).
   */
  @IsBoolean()
  retryPipeRejections = false;

  /**
   * Marks an error (or any error on its `cause` chain) as fatal: the message goes straight to
   * MANUAL_REQUIRED instead of being retried.
   */
  @IsOptional()
  isFatalError?: (error: unknown) => boolean = undefined;

  /**
   * Chooses the transport of a message published without one: a name from `transports`, or
   * undefined for `defaultTransport`. Runs inside `publish()`, so it must be quick and must not
   * throw (its error fails the publish). A name no transport of this process has is stored as it
   * is: the message waits until a process that has it dispatches it.
   */
  @IsOptional()
  route?: (message: Readonly<OutboxMessage>) => string | undefined = undefined;
}

/** What users pass: every field optional. */
export type OutboxModuleOptionsInput = Partial<OutboxModuleOptions>;
