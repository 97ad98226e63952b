import { statCpuMicros } from './proc-stat';

/**
 * CPU time (µs) used so far by the main thread alone, not the process's other threads (a load
 * generator, GC helpers), read from /proc; undefined where there is none. On a shared machine it
 * is what the server's work costs, where event-loop busy time also counts the time the thread
 * waited for a core. Resolution 10 ms: read it around runs of seconds.
 */
export function mainThreadCpuMicros(): number | undefined {
  return statCpuMicros(`/proc/self/task/${process.pid}/stat`, false);
}
