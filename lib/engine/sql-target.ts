import type { DataSource, EntityManager } from 'typeorm';

/** Where a statement runs: an open transaction's manager, or the pool (auto-commit). */
export type SqlTarget = DataSource | EntityManager;
