import { readFileSync } from 'node:fs';

/** /proc reports CPU times in USER_HZ ticks, 100 per second on Linux. */
const TICKS_PER_SECOND = 100;

/**
 * CPU time (µs) used so far by the main thread alone, not the process's other threads (a load
 * generator, GC helpers), read from /proc; undefined where there is none. On a shared machine it
 * is what the server's work costs, where event-loop busy time also counts the time the thread
 * waited for a core. Resolution 10 ms: read it around runs of seconds.
 */
export function mainThreadCpuMicros(): number | undefined {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    // After "pid (comm) ": state is field 3 of proc(5), so utime (14) and stime (15) are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}
