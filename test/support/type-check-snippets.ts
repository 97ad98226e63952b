import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import { REPOSITORY_ROOT } from './readme-quick-start';

/** A block of documentation code, as a user copies it into a file of that name (the others import it by). */
export interface Snippet {
  file: string;
  code: string;
}

/**
 * The type errors of `snippets`, formatted ('' when there are none). They are written side by
 * side into a directory inside the repository, so that its node_modules resolve the peers (outside
 * tsconfig's `include`), and checked with the repository's compiler options and `paths` (mapping
 * `nestjs-outbox` to lib/index.ts, say). Only the snippets' own problems: the library's are
 * `npm run typecheck`'s to report.
 */
export function typeErrorsOf(snippets: Snippet[], paths: ts.MapLike<string[]>, directoryPrefix: string): string {
  const directory = mkdtempSync(join(REPOSITORY_ROOT, directoryPrefix));
  try {
    const files = snippets.map(({ file, code }) => {
      const path = join(directory, file);
      writeFileSync(path, `${code}\n`);
      return path;
    });
    const program = ts.createProgram(files, compilerOptions(paths));
    const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => !d.file || d.file.fileName.startsWith(directory));
    return ts.formatDiagnostics(diagnostics, {
      getCanonicalFileName: (name) => name,
      getCurrentDirectory: () => REPOSITORY_ROOT,
      getNewLine: () => '\n',
    });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** The repository's compiler options, with `paths` resolving the snippets' imports. */
function compilerOptions(paths: ts.MapLike<string[]>): ts.CompilerOptions {
  const configPath = join(REPOSITORY_ROOT, 'tsconfig.json');
  const { config, error } = ts.readConfigFile(configPath, (path) => ts.sys.readFile(path));
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, REPOSITORY_ROOT, undefined, configPath);
  return { ...options, noEmit: true, baseUrl: REPOSITORY_ROOT, paths };
}
