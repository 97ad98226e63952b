import { DEFAULT_INBOX_TABLE, DEFAULT_OUTBOX_TABLE, TableNames } from '../naming/table-names';
import { CliOutput } from './cli-command';

/** A command's result as the one JSON document of stdout (dates as ISO text). */
export function printJson(output: CliOutput, value: unknown): void {
  output.out(`${JSON.stringify(value, null, 2)}\n`);
}

/** A duration for people: `350 ms`, `12.4 s`, `3 min 05 s`, `2 h 10 min`, `3 d 4 h`. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  const seconds = ms / 1_000;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${String(Math.floor(seconds % 60)).padStart(2, '0')} s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ${String(minutes % 60).padStart(2, '0')} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** An instant to the second, in UTC: `2024-03-01 12:00:05Z`. */
export function formatInstant(instant: Date | null): string {
  return instant ? `${instant.toISOString().slice(0, 19).replace('T', ' ')}Z` : '';
}

/** `1 message`, `3 messages`; `1 delivery`, `3 deliveries`. */
export function counted(count: number, noun: string): string {
  if (count === 1) return `1 ${noun}`;
  return `${count} ${noun.endsWith('y') ? `${noun.slice(0, -1)}ies` : `${noun}s`}`;
}

/** A command to suggest, with the options that name the same DataSource file and tables. */
export function suggestedCommand(command: string, { file, tables }: { file: string; tables: TableNames }): string {
  const parts = ['nestjs-outbox', command, '-d', shellWord(file)];
  if (tables.outbox !== DEFAULT_OUTBOX_TABLE) parts.push('--table', tables.outbox);
  if (tables.inbox !== DEFAULT_INBOX_TABLE) parts.push('--inbox-table', tables.inbox);
  return parts.join(' ');
}

/** A word a POSIX shell reads back as it is. */
function shellWord(text: string): string {
  return /^[\w./:@%+=,-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}
