import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import { quickStartBlocks, REPOSITORY_ROOT } from '../support/readme-quick-start';

/**
 * The README's quick start is what a newcomer copies first, so it must compile against the
 * library as it is. Each block to check follows a marker naming its file,
 * `<!-- quick-start: app.module.ts -->`; the blocks import each other by those names and import
 * the library as `nestjs-outbox`, which is mapped to lib/index.ts here.
 */

const ROOT = REPOSITORY_ROOT;

/** The repository's compiler options, with `nestjs-outbox` resolved to the sources. */
function compilerOptions(): ts.CompilerOptions {
  const configPath = join(ROOT, 'tsconfig.json');
  const { config, error } = ts.readConfigFile(configPath, (path) => ts.sys.readFile(path));
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, ROOT, undefined, configPath);
  return { ...options, noEmit: true, baseUrl: ROOT, paths: { 'nestjs-outbox': ['lib/index.ts'] } };
}

describe('README quick start', () => {
  const blocks = quickStartBlocks();

  it('marks the outbox and the inbox examples for checking', () => {
    const files = blocks.map((block) => block.file);
    expect(new Set(files).size).toBe(files.length);
    expect(blocks.some((block) => block.code.includes('this.outbox.publish('))).toBe(true);
    expect(blocks.some((block) => block.code.includes('@InboxHandler('))).toBe(true);
  });

  it('type-checks against the library', () => {
    // Inside the repository, so that its node_modules resolve the peers; outside tsconfig's `include`.
    const directory = mkdtempSync(join(ROOT, '.quick-start-'));
    try {
      const files = blocks.map(({ file, code }) => {
        const path = join(directory, file);
        writeFileSync(path, `${code}\n`);
        return path;
      });
      const program = ts.createProgram(files, compilerOptions());
      // Only the quick start's own problems: the library's are `npm run typecheck`'s to report.
      const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => !d.file || d.file.fileName.startsWith(directory));
      const report = ts.formatDiagnostics(diagnostics, {
        getCanonicalFileName: (name) => name,
        getCurrentDirectory: () => ROOT,
        getNewLine: () => '\n',
      });
      expect(report).toBe('');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  }, 180_000);
});
