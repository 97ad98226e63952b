import { GenericContainer, Wait } from 'testcontainers';
import { checkMysql, checkRabbitMq } from './service-checks';
import { MYSQL8_CONTAINER } from './mysql8-container';

const IMAGE = 'mysql:8.4';
const ROOT_PASSWORD = 'outbox-test';

/**
 * Global setup of integration:mysql8: the MySQL 8 server at MYSQL_URL when given, else a
 * container started here (jest.config.js runs this project only where MYSQL_URL is set or a
 * Docker engine answers). Test processes start after this and inherit MYSQL_URL.
 */
export default async function globalSetup(): Promise<void> {
  if (!process.env.MYSQL_URL) {
    const container = await new GenericContainer(IMAGE)
      .withEnvironment({ MYSQL_ROOT_PASSWORD: ROOT_PASSWORD, MYSQL_DATABASE: 'test' })
      .withExposedPorts(3306)
      // The data lives as long as the run: memory is faster than the container's disk.
      .withTmpFs({ '/var/lib/mysql': 'rw' })
      // The image's initialisation runs a first server on port 0; the real one listens on 3306
      // (the X plugin's own "ready" line names port 33060).
      .withWaitStrategy(Wait.forLogMessage(/ready for connections\. Version: .* port: 3306 /))
      .withStartupTimeout(180_000)
      .start();
    MYSQL8_CONTAINER.set(container);
    process.env.MYSQL_URL = `mysql://root:${ROOT_PASSWORD}@${container.getHost()}:${container.getMappedPort(3306)}/test`;
  }
  await Promise.all([checkMysql('MySQL 8', process.env.MYSQL_URL, 'MYSQL_URL'), checkRabbitMq()]);
}
