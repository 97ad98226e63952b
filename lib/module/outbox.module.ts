import { DynamicModule, Logger, Module, Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { DatabaseDialect } from '../dialects/database-dialect';
import { fitReadModels } from '../entities/fit-read-models';
import { outboxEntities } from '../entities/outbox-entities';
import { qualifiedTable, resolveDialect } from '../dialects/resolve-dialect';
import { InboxConsumers } from '../inbox/inbox-consumers';
import { InboxHandlerExplorer } from '../inbox/inbox-handler.explorer';
import { InboxSubscriptions } from '../inbox/inbox-subscriptions';
import { InboxWakeup } from '../inbox/inbox-wakeup';
import { ConfigurableOutboxModule, OUTBOX_MODULE_RAW_OPTIONS, OUTBOX_OPTIONS_TYPE } from './outbox-module-definition';
import { OutboxModuleStaticOptions } from '../options/outbox-module-static-options';
import { OutboxModuleAsyncOptions } from '../options/outbox-module-async-options';
import {
  DATABASE_DIALECT,
  INBOX_DIALECT,
  INBOX_SUBSCRIPTIONS,
  laneTransportToken,
  OUTBOX_DATA_SOURCE,
  OUTBOX_WORKER_DATA_SOURCE,
  OUTBOX_DIALECT,
  OUTBOX_STANDBY_GATE,
  OUTBOX_INSTANCE_ID,
  OUTBOX_OPTIONS,
  OUTBOX_TABLE_NAMES,
  OUTBOX_TRANSPORTS,
} from '../naming/injection-tokens';
import { defaultTransportName, LaneSpec, laneSpecs, transportOptionProblems } from '../options/transport-lanes';
import { OutboxTransport } from '../message/outbox-transport';
import { OutboxTransports } from '../transport/outbox-transports';
import { OutboxModuleOptions, OutboxModuleOptionsInput } from '../options/outbox-module-options';
import { TableNames } from '../naming/table-names';
import { runtimeOptionProblems, validateOutboxOptions } from '../options/validate-options';
import { staticOptionProblems, validateStaticOptions } from '../options/validate-static-options';
import { OutboxOptionsError } from '../errors';
import { OutboxWakeup } from '../outbox/outbox-wakeup';
import { CommitHandoff } from '../outbox/commit-handoff';
import { ServerRollbackWatch } from '../dialects/server-rollback-watch';
import { RabbitMqOutboxTransport } from '../transport/rabbitmq.transport';
import { createTablesAtStartup } from '../schema/create-tables-at-startup';
import { outboxStatementsVersion } from '../schema/outbox-schema-version';
import { assertTableNamesFit } from '../schema/table-name-limits';
import { prepareArchiveTablesAtStartup } from '../schema/archive-tables-at-startup';
import { verifyTablesAtStartup } from '../schema/verify-tables-at-startup';
import { OutboxMetrics } from '../metrics/outbox-metrics';
import { openWorkerDataSource, WorkerDataSourceCloser } from '../dialects/worker-data-source';
import { standbyGateFor } from '../dialects/standby-gate-for';
import { WebhookInboxExplorer } from '../webhooks/webhook-inbox.explorer';
import { WebhookRefusalWatch } from '../webhooks/webhook-refusal-watch';
import { namedOutbox } from '../naming/outbox-name';
import { OutboxIdentity } from '../naming/outbox-identity';
import { outboxTransactionHostProvider } from '../naming/outbox-transaction-host';
import { publicProviders } from './public-providers';
import { getOutboxTransportToken } from './outbox-tokens';

/**
 * The transactional outbox and inbox: `OutboxService` to publish inside your transactions, a
 * dispatcher that sends committed messages to the broker at least once, `@InboxHandler()` to make
 * consumers idempotent, a stuck detector and retention.
 *
 * Needs `TypeOrmModule.forRoot()`, `ScheduleModule.forRoot()`, and (for the default transport)
 * `RabbitMQModule.forRoot()` in the application; `ClsModule` with `ClsPluginTransactional`
 * for `@Transactional()` support.
 */
@Module({})
export class OutboxModule extends ConfigurableOutboxModule {
  /** Static and runtime options together; every invalid option fails here, where the module is declared. */
  static forRoot(options: typeof OUTBOX_OPTIONS_TYPE = {}): DynamicModule {
    // Static options fail here, where the app's module is declared, before anything connects.
    const { tableName, inboxTableName, dataSourceName, transport, transports, defaultTransport, isGlobal, name, transactionConnectionName, ...runtime } =
      options;
    const statics = { tableName, inboxTableName, dataSourceName, transport, transports, defaultTransport, isGlobal, name, transactionConnectionName };
    const problems = [...staticOptionProblems(statics), ...runtimeOptionProblems(runtime)];
    // A transport that checks its settings against the module's does so here too, before any
    // pool opens; with forRootAsync it can only do so at module init.
    if (problems.length === 0) {
      const validated = validateOutboxOptions(runtime);
      for (const lane of laneSpecs(statics, () => RabbitMqOutboxTransport)) problems.push(...transportOptionProblems(lane.transport, validated));
    }
    if (problems.length > 0) throw new OutboxOptionsError(problems);
    return withOutboxProviders(super.forRoot(options), statics);
  }

  /** Static options (table names, transport, …) fail here, where the module is declared; the factory's options once it has run. */
  static forRootAsync(options: OutboxModuleAsyncOptions): DynamicModule {
    return withOutboxProviders(super.forRootAsync(options), options);
  }
}

function withOutboxProviders(definition: DynamicModule, statics: OutboxModuleStaticOptions): DynamicModule {
  const tables: TableNames = validateStaticOptions(statics);
  const { outbox: tableName, inbox: inboxTableName } = tables;
  const lanes = laneSpecs(statics, () => RabbitMqOutboxTransport);
  const defaultLane = defaultTransportName(statics.defaultTransport, lanes);
  const outboxName = namedOutbox(statics.name);
  const exported = publicProviders(outboxName);
  // The tables' read models: loaded by a DataSource with autoLoadEntities, and injectable with
  // @InjectRepository(outboxMessageEntity(tableName)) wherever the module is visible.
  const readModels = TypeOrmModule.forFeature(outboxEntities({ tableName, inboxTableName }), statics.dataSourceName);
  const providers: Provider[] = [
    {
      provide: OUTBOX_OPTIONS,
      inject: [OUTBOX_MODULE_RAW_OPTIONS],
      useFactory: (raw: OutboxModuleOptionsInput) => validateOutboxOptions(raw),
    },
    { provide: OUTBOX_DATA_SOURCE, useExisting: getDataSourceToken(statics.dataSourceName) },
    { provide: OutboxIdentity, useValue: new OutboxIdentity(outboxName, statics.transactionConnectionName) },
    outboxTransactionHostProvider(statics.transactionConnectionName, statics.dataSourceName),
    { provide: OUTBOX_TABLE_NAMES, useValue: tables },
    {
      provide: DATABASE_DIALECT,
      inject: [OUTBOX_DATA_SOURCE, OUTBOX_OPTIONS],
      useFactory: async (dataSource: DataSource, options: OutboxModuleOptions) => {
        const dialect = await resolveDialect(dataSource);
        // The library's statements run on the application's pool too (publish, inbox transactions).
        dialect.guardConnections?.(dataSource);
        assertTableNamesFit(dialect.schemaSql.identifierLimit, tables);
        await verifyTablesAtStartup(dataSource, dialect, tables);
        await createTablesAtStartup(dataSource, dialect, tables);
        if (options.retentionMode === 'archive') await prepareArchiveTablesAtStartup(dataSource, dialect, tables);
        const readModelWarning = fitReadModels(dataSource, { tableName, inboxTableName });
        if (readModelWarning) new Logger('OutboxModule').warn(readModelWarning);
        return dialect;
      },
    },
    {
      provide: OUTBOX_WORKER_DATA_SOURCE,
      inject: [OUTBOX_DATA_SOURCE, DATABASE_DIALECT, OUTBOX_OPTIONS],
      useFactory: (dataSource: DataSource, dialect: DatabaseDialect, options: OutboxModuleOptions) => openWorkerDataSource(dataSource, dialect, options, lanes),
    },
    WorkerDataSourceCloser,
    {
      provide: OUTBOX_STANDBY_GATE,
      inject: [DATABASE_DIALECT, OUTBOX_WORKER_DATA_SOURCE, OUTBOX_OPTIONS],
      useFactory: (dialect: DatabaseDialect, workerDataSource: DataSource, options: OutboxModuleOptions) => standbyGateFor(dialect, workerDataSource, options),
    },
    {
      provide: OUTBOX_DIALECT,
      inject: [DATABASE_DIALECT, OUTBOX_DATA_SOURCE],
      // After DATABASE_DIALECT, which created or upgraded the table: its statements fit the table as it now is.
      useFactory: async (dialect: DatabaseDialect, dataSource: DataSource) =>
        dialect.outbox(qualifiedTable(dataSource, tableName), await outboxStatementsVersion(dataSource, dialect, tableName)),
    },
    {
      provide: INBOX_DIALECT,
      inject: [DATABASE_DIALECT, OUTBOX_DATA_SOURCE],
      useFactory: (dialect: DatabaseDialect, dataSource: DataSource) => dialect.inbox(qualifiedTable(dataSource, inboxTableName)),
    },
    {
      provide: OUTBOX_INSTANCE_ID,
      inject: [OUTBOX_OPTIONS],
      // Two applications in one process must not share an identity.
      useFactory: (options: OutboxModuleOptions) => options.instanceId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
    },
    ...transportProviders(lanes, defaultLane, outboxName),
    OutboxWakeup,
    CommitHandoff,
    ServerRollbackWatch,
    InboxWakeup,
    InboxConsumers,
    InboxSubscriptions,
    { provide: INBOX_SUBSCRIPTIONS, useExisting: InboxSubscriptions },
    InboxHandlerExplorer,
    WebhookInboxExplorer,
    WebhookRefusalWatch,
    OutboxMetrics,
    // OutboxService, OutboxDispatcher, InboxService, InboxWorker, WebhookIntake, StuckDetector,
    // Retention and OutboxAdmin, under the tokens of the outbox's name.
    ...exported.providers,
  ];
  return {
    ...definition,
    global: statics.isGlobal ?? true,
    imports: [...(definition.imports ?? []), DiscoveryModule, readModels],
    providers: [...(definition.providers ?? []), ...providers],
    exports: [...(definition.exports ?? []), ...exported.exports, readModels],
  };
}

/**
 * One provider per lane's transport (Nest creates each) and the registry of them all. The default
 * lane's transport is created under the token users know (`OUTBOX_TRANSPORT`, or
 * `getOutboxTransportToken(name)` in a named outbox) and the lane and the registry take it from
 * there, so that `Test.createTestingModule(...).overrideProvider(OUTBOX_TRANSPORT)` replaces the
 * transport the dispatcher sends through, not only the one tests read. A named outbox provides no
 * `OUTBOX_TRANSPORT` of its own: overriding it reaches the default outbox only.
 */
function transportProviders(lanes: LaneSpec[], defaultLane: string, outboxName: string | undefined): Provider[] {
  const publicToken = getOutboxTransportToken(outboxName);
  const tokens = lanes.map((lane) => laneTransportToken(lane.name));
  return [
    ...lanes.flatMap((lane, index): Provider[] =>
      lane.name === defaultLane
        ? [
            { provide: publicToken, useClass: lane.transport },
            { provide: tokens[index], useExisting: publicToken },
          ]
        : [{ provide: tokens[index], useClass: lane.transport }],
    ),
    {
      provide: OUTBOX_TRANSPORTS,
      inject: tokens,
      useFactory: (...transports: OutboxTransport[]) =>
        new OutboxTransports(
          lanes.map((spec, index) => ({ name: spec.name, transport: transports[index], spec })),
          defaultLane,
        ),
    },
  ];
}
