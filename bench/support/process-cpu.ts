import { readdirSync, readFileSync } from 'node:fs';
import { statCpuMicros } from './proc-stat';

/** The server processes a drain's CPU is read from, by their command name in /proc. */
export const SERVER_COMMANDS = { postgres: 'postgres', mariadb: 'mariadbd', mysql: 'mysqld', rabbitmq: 'beam.smp' } as const;

/**
 * CPU time (µs) of a process and of its children it has reaped. PostgreSQL runs a backend per
 * connection: a backend that exits during a drain is counted through the postmaster's reaped time.
 */
function processCpuMicros(pid: number | string): number | undefined {
  return statCpuMicros(`/proc/${pid}/stat`, true);
}

/** Every process whose command name is `command` (as /proc/<pid>/comm has it). */
function pidsOf(command: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
  } catch {
    return [];
  }
  return entries.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === command;
    } catch {
      return false;
    }
  });
}

/**
 * The CPU time a set of processes has used, read twice around a measured run: the dispatcher
 * processes by pid, a server by its command name (every process of it on this machine, so only
 * meaningful where the bench has the server to itself). Resolution 10 ms: read around seconds.
 */
export class CpuMeter {
  private constructor(private readonly read: () => number | undefined) {}

  static ofPids(pids: number[]): CpuMeter {
    return new CpuMeter(() => sum(pids.map(processCpuMicros)));
  }

  static ofCommand(command: string): CpuMeter {
    return new CpuMeter(() => {
      const pids = pidsOf(command);
      return pids.length === 0 ? undefined : sum(pids.map(processCpuMicros));
    });
  }

  /** Starts a reading; the returned function gives the µs used since, or undefined where it cannot be read. */
  start(): () => number | undefined {
    const before = this.read();
    return () => {
      const after = this.read();
      return before === undefined || after === undefined ? undefined : after - before;
    };
  }
}

function sum(values: (number | undefined)[]): number | undefined {
  return values.some((value) => value === undefined) ? undefined : (values as number[]).reduce((a, b) => a + b, 0);
}
