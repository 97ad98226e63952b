import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { benchWritePath } from './write-path.bench';

function table(headers: string[], rows: string[][]): string {
  return [`| ${headers.join(' | ')} |`, `| ${headers.map(() => '---').join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

async function main(): Promise<void> {
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  const sections: string[] = [`# Benchmark results\n\nMachine: ${machine}. Date: ${new Date().toISOString()}. Command: \`npm run bench\`.`];

  console.log('write path (PostgreSQL)…');
  const writePath = await benchWritePath();
  sections.push(
    '## Write path: business insert + outbox message per transaction (PostgreSQL, 1 KB payload)\n\n' +
      'Transactions/s, median of runs with min–max; ratio against the hand-written outbox INSERT in the same run.\n\n' +
      table(['concurrency', 'variant', 'tx/s', 'ratio'], writePath.map((r) => [String(r.concurrency), r.variant, r.txPerSecond, r.ratio])),
  );

  const report = sections.join('\n\n') + '\n';
  console.log(`\n${report}`);
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  writeFileSync(join(__dirname, 'results', 'latest.md'), report);
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
