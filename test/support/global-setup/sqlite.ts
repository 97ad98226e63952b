import { checkRabbitMq, checkSqlite } from './service-checks';

/** Global setup of integration:sqlite: SQLite files can be made, RabbitMQ answers. */
export default async function globalSetup(): Promise<void> {
  await Promise.all([checkSqlite(), checkRabbitMq()]);
}
