/** What each schema version of the outbox table added, for logs and the CLI. */
const ADDED_BY_VERSION: Record<number, string> = {
  2: 'transport and destination columns, lane index',
  3: 'on PostgreSQL, a business-key unique index over the rows that have one',
  4: 'on MySQL and MariaDB, an ordering index over the keys of unfinished rows only and a lane index leading with the status in place of the processing index',
};

/** What an upgrade from version `from` to the latest brings, in words. */
export function outboxUpgradeSummary(from: number): string {
  return Object.entries(ADDED_BY_VERSION)
    .filter(([version]) => Number(version) > from)
    .map(([, added]) => added)
    .join('; ');
}
