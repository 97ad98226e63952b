import { checkPostgres, checkRabbitMq } from './service-checks';

/** Global setup of integration:postgres: PostgreSQL and RabbitMQ answer. */
export default async function globalSetup(): Promise<void> {
  await Promise.all([checkPostgres(), checkRabbitMq()]);
}
