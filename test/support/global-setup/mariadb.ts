import { MARIADB_URL } from '../environment';
import { checkMysql, checkRabbitMq } from './service-checks';

/** Global setup of integration:mariadb: MariaDB and RabbitMQ answer. */
export default async function globalSetup(): Promise<void> {
  await Promise.all([checkMysql('MariaDB', MARIADB_URL, 'MARIADB_URL'), checkRabbitMq()]);
}
