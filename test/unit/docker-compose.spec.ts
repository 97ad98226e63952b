import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

/**
 * docker-compose.yml gives a laptop the services the tests expect. No Docker engine runs in CI,
 * so this checks the file instead: each service, its image, the host port and the credentials
 * that the tests' default URLs (test/support/environment.ts) connect with.
 */

interface ComposeService {
  image: string;
  ports?: string[];
  environment?: Record<string, string>;
}

const compose = parse(readFileSync(join(__dirname, '..', '..', 'docker-compose.yml'), 'utf8')) as { services: Record<string, ComposeService> };

interface DefaultUrls {
  postgres: URL;
  mariadb: URL;
  amqp: URL;
}

/** The URLs environment.ts falls back to when no variable overrides them. */
async function defaultUrls(): Promise<DefaultUrls> {
  const names = ['DATABASE_URL', 'MARIADB_URL', 'AMQP_URL'];
  const saved = names.map((name) => process.env[name]);
  for (const name of names) delete process.env[name];
  try {
    let urls!: DefaultUrls;
    await jest.isolateModulesAsync(async () => {
      const environment = await import('../support/environment');
      urls = { postgres: new URL(environment.POSTGRES_URL), mariadb: new URL(environment.MARIADB_URL), amqp: new URL(environment.AMQP_URL) };
    });
    return urls;
  } finally {
    names.forEach((name, i) => (saved[i] === undefined ? delete process.env[name] : (process.env[name] = saved[i])));
  }
}

let urls: DefaultUrls;
beforeAll(async () => {
  urls = await defaultUrls();
});

function service(name: string): ComposeService {
  const found = compose.services[name];
  if (!found) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
}

/** The container port published on 127.0.0.1:`hostPort`, if any. */
function publishedPort(name: string, hostPort: string): string | undefined {
  for (const mapping of service(name).ports ?? []) {
    const [host, published, container] = String(mapping).split(':');
    if (host === '127.0.0.1' && published === hostPort) return container;
  }
  return undefined;
}

describe('docker-compose.yml', () => {
  it('runs PostgreSQL 15, MariaDB 10.11 and RabbitMQ 3 with its management UI', () => {
    expect(service('postgres').image).toBe('postgres:15');
    expect(service('mariadb').image).toBe('mariadb:10.11');
    expect(service('rabbitmq').image).toBe('rabbitmq:3-management');
  });

  it('publishes each service on the port of the tests’ default URL', () => {
    expect(publishedPort('postgres', urls.postgres.port)).toBe('5432');
    expect(publishedPort('mariadb', urls.mariadb.port)).toBe('3306');
    expect(publishedPort('rabbitmq', urls.amqp.port)).toBe('5672');
    expect(publishedPort('rabbitmq', '15672')).toBe('15672');
  });

  it('lets the PostgreSQL URL’s user in without a password, to its database', () => {
    const env = service('postgres').environment ?? {};
    expect(urls.postgres.password).toBe('');
    expect(env.POSTGRES_USER).toBe(urls.postgres.username);
    expect(env.POSTGRES_HOST_AUTH_METHOD).toBe('trust');
    expect(env.POSTGRES_DB).toBe(urls.postgres.pathname.slice(1));
  });

  it('lets MariaDB’s root in from the host without a password, with the test database', () => {
    const env = service('mariadb').environment ?? {};
    expect(urls.mariadb.username).toBe('root');
    expect(urls.mariadb.password).toBe('');
    expect(env.MARIADB_ALLOW_EMPTY_ROOT_PASSWORD).toBe('1');
    expect(env.MARIADB_ROOT_HOST).toBe('%');
    expect(env.MARIADB_DATABASE).toBe(urls.mariadb.pathname.slice(1));
  });

  it('gives RabbitMQ the AMQP URL’s user and password', () => {
    const env = service('rabbitmq').environment ?? {};
    expect(env.RABBITMQ_DEFAULT_USER).toBe(decodeURIComponent(urls.amqp.username));
    expect(env.RABBITMQ_DEFAULT_PASS).toBe(decodeURIComponent(urls.amqp.password));
  });

  it('runs NATS and Redis on the ports the ClientProxy transport’s test defaults to', () => {
    expect(publishedPort('nats', '4222')).toBe('4222');
    expect(publishedPort('redis', '6379')).toBe('6379');
  });
});
