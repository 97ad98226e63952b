import { readFileSync } from 'node:fs';

/** /proc reports CPU times in USER_HZ ticks, 100 per second on Linux. */
const MICROS_PER_TICK = 1_000_000 / 100;

/**
 * CPU time (µs, user + system) from a proc(5) `stat` file (a process's or a thread's), with the
 * time of the children it has reaped where `withReapedChildren`; undefined where there is none.
 * Resolution 10 ms: read it around runs of seconds.
 */
export function statCpuMicros(path: string, withReapedChildren: boolean): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  // After "pid (comm) ": utime, stime, cutime and cstime are fields 14 to 17 of proc(5).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const own = Number(fields[11]) + Number(fields[12]);
  return (withReapedChildren ? own + Number(fields[13]) + Number(fields[14]) : own) * MICROS_PER_TICK;
}
