import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DatabaseDialect } from '../database-dialect';
import { SchemaSql } from '../schema-sql';
import { InboxDialect } from '../inbox-dialect';
import { OutboxDialect } from '../outbox-dialect';
import { MysqlClaimStrategy } from './mysql-claim';
import { ConditionalUpdateClaim } from './mysql-conditional-claim';
import { MysqlInboxDialect } from './mysql-inbox.dialect';
import { MysqlOutboxDialect } from './mysql-outbox.dialect';
import { mysqlSchemaSql } from './mysql-schema';
import { detectMysqlServer, MysqlServer } from './mysql-server';
import { SkipLockedClaim } from './mysql-skip-locked-claim';
import { mysqlReportsNoTransaction, rollsBackMysqlTransaction } from './mysql-transaction-state';

/**
 * MySQL 8 / MariaDB: UTC DATETIME(6) times from the database clock, composite indexes instead of
 * partial ones, claims with SKIP LOCKED where the server has it and conditional UPDATEs where it
 * has not. No NOTIFY: in-process wake-ups and polling find new rows.
 */
export class MysqlDialect implements DatabaseDialect {
  readonly description: string;
  readonly opensWorkerPool = true;
  readonly schemaSql: SchemaSql;

  /** @param claimStrategy how rows are claimed; by default the best the server supports */
  constructor(
    readonly server: MysqlServer,
    readonly claimStrategy: MysqlClaimStrategy = defaultClaimStrategy(server),
  ) {
    this.description = `${server.flavor} ${server.version} (${claimStrategy.name})`;
    this.schemaSql = mysqlSchemaSql(server);
  }

  /** A deadlock, a full lock table, and a lock wait timeout where the server is set to roll back on it. */
  rollsBackTransaction(error: unknown): boolean {
    return rollsBackMysqlTransaction(error, this.server.rollbackOnTimeout);
  }

  /** The OK packet's status flags, which every statement that returns no rows carries. */
  reportsNoTransaction(raw: unknown): boolean {
    return mysqlReportsNoTransaction(raw);
  }

  /** Version 4's ordering index where the table has it; version 3's statements, which need no other, before. */
  outbox(quotedTable: string, schemaVersion?: number): OutboxDialect {
    return new MysqlOutboxDialect(quotedTable, this.claimStrategy, schemaVersion === undefined || schemaVersion >= 4);
  }

  inbox(quotedTable: string): InboxDialect {
    return new MysqlInboxDialect(quotedTable, this.claimStrategy);
  }
}

/** SKIP LOCKED claims where the server has them; conditional UPDATEs on older servers. */
export function defaultClaimStrategy(server: MysqlServer): MysqlClaimStrategy {
  return server.skipLocked ? new SkipLockedClaim(server.lockingOf) : new ConditionalUpdateClaim();
}

/** MySQL 8 / MariaDB, as the connected server supports them. */
export async function createMysqlDialect(dataSource: DataSource): Promise<DatabaseDialect> {
  const dialect = new MysqlDialect(await detectMysqlServer(dataSource));
  if (!dialect.server.skipLocked) {
    new Logger('OutboxModule').log(
      `${dialect.server.flavor} ${dialect.server.version} has no SKIP LOCKED (MySQL 8.0.1+, MariaDB 10.6+): rows are claimed with conditional UPDATEs`,
    );
  }
  return dialect;
}
