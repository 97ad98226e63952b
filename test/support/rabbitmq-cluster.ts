import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPTS = resolve(__dirname, '../../scripts/rabbitmq-cluster');
const RABBITMQ_SBIN = process.env.RABBITMQ_SBIN ?? '/usr/lib/rabbitmq/bin';

/** A node of the cluster, by its letter. */
export type ClusterNode = 'a' | 'b' | 'c';
export const CLUSTER_NODES: readonly ClusterNode[] = ['a', 'b', 'c'];

/** Longest the scripts may take: three Erlang nodes booting on a loaded 2-core machine. */
const SCRIPT_TIMEOUT_MS = 600_000;

/**
 * The three-node RabbitMQ cluster of scripts/rabbitmq-cluster/, driven from a test: its own
 * directory, ports and Erlang cookie (see env.sh), never the shared broker.
 */
export class RabbitMqCluster {
  /** AMQP URIs of nodes a, b and c, in that order. */
  readonly uris: string[];
  private readonly env: NodeJS.ProcessEnv;

  /**
   * `port` is node a's AMQP port (b and c take the next two), `distPort` its Erlang distribution
   * port; `directory` holds the cluster's data, logs and cookie. Unset, each comes from the
   * scripts' variable (`RABBITMQ_CLUSTER_PORT`…, see env.sh), so that two checkouts on one machine
   * can run clusters side by side, else from the scripts' defaults.
   */
  constructor(options: { directory?: string; port?: number; distPort?: number; epmdPort?: number } = {}) {
    const env = process.env;
    const port = options.port ?? Number(env.RABBITMQ_CLUSTER_PORT ?? 5681);
    this.uris = CLUSTER_NODES.map((_, i) => `amqp://guest:guest@127.0.0.1:${port + i}`);
    this.env = {
      ...process.env,
      RABBITMQ_SBIN,
      RABBITMQ_CLUSTER_DIR: options.directory ?? env.RABBITMQ_CLUSTER_DIR ?? join(tmpdir(), `${env.TEST_NAMESPACE_PREFIX ?? ''}nestjs-outbox-rabbitmq-cluster`),
      RABBITMQ_CLUSTER_PORT: String(port),
      RABBITMQ_CLUSTER_DIST_PORT: String(options.distPort ?? env.RABBITMQ_CLUSTER_DIST_PORT ?? 25681),
      RABBITMQ_CLUSTER_EPMD_PORT: String(options.epmdPort ?? env.RABBITMQ_CLUSTER_EPMD_PORT ?? 4381),
    };
  }

  /** Why the cluster cannot run on this machine, or undefined when it can. */
  static unavailable(): string | undefined {
    return existsSync(join(RABBITMQ_SBIN, 'rabbitmq-server')) ? undefined : `rabbitmq-server is not installed in ${RABBITMQ_SBIN} (set RABBITMQ_SBIN)`;
  }

  /** The URI of `node`. */
  uri(node: ClusterNode): string {
    return this.uris[CLUSTER_NODES.indexOf(node)];
  }

  /** Starts the three nodes and joins b and c to a. */
  async start(): Promise<void> {
    await this.script('start.sh');
  }

  /** Stops every node (and the cluster's epmd); `purge` also deletes the cluster's directory. */
  async stop(purge = true): Promise<void> {
    await this.script('stop.sh', ...(purge ? ['--purge'] : []));
  }

  /** Stops `node` gracefully: its clients' connections are closed with CONNECTION_FORCED. */
  async stopNode(node: ClusterNode): Promise<void> {
    await this.script('node.sh', 'stop', node);
  }

  /** Kills `node`'s Erlang VM: its clients' sockets are reset, as in a host crash. */
  async killNode(node: ClusterNode): Promise<void> {
    await this.script('node.sh', 'kill', node);
  }

  /** Starts `node` again; it rejoins the cluster with its data. */
  async startNode(node: ClusterNode): Promise<void> {
    await this.script('node.sh', 'start', node);
  }

  /** The node of `queue`'s leader (a quorum queue). */
  async leaderOf(queue: string): Promise<ClusterNode> {
    return (await this.script('node.sh', 'leader', queue)).trim() as ClusterNode;
  }

  /** The nodes the cluster reports running. */
  async runningNodes(): Promise<ClusterNode[]> {
    return (await this.script('node.sh', 'running')).split('\n').filter(Boolean).sort() as ClusterNode[];
  }

  /** How many client connections each running node holds, e.g. `{ a: 4, b: 0, c: 1 }`. */
  async connectionsByNode(): Promise<Partial<Record<ClusterNode, number>>> {
    const counts: Partial<Record<ClusterNode, number>> = {};
    for (const line of (await this.script('node.sh', 'connections')).split('\n').filter(Boolean)) {
      const [node, count] = line.split(' ');
      counts[node as ClusterNode] = Number(count);
    }
    return counts;
  }

  private async script(name: string, ...args: string[]): Promise<string> {
    try {
      const { stdout } = await run(join(SCRIPTS, name), args, { env: this.env, timeout: SCRIPT_TIMEOUT_MS });
      return stdout;
    } catch (error) {
      const { stderr, stdout } = error as { stderr?: string; stdout?: string };
      throw new Error(`scripts/rabbitmq-cluster/${name} ${args.join(' ')} failed: ${(error as Error).message}\n${stdout ?? ''}${stderr ?? ''}`);
    }
  }
}
