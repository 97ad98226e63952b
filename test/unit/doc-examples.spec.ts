import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import { docExamples } from '../support/doc-examples';
import { REPOSITORY_ROOT } from '../support/readme-quick-start';

/**
 * The examples of the documentation that are marked `<!-- compiled: file.ts -->` compile against
 * the library as it is (imported as `nestjs-outbox`), with `@nestjs/config` as it declares itself.
 */

function compilerOptions(): ts.CompilerOptions {
  const configPath = join(REPOSITORY_ROOT, 'tsconfig.json');
  const { config, error } = ts.readConfigFile(configPath, (path) => ts.sys.readFile(path));
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, REPOSITORY_ROOT, undefined, configPath);
  return {
    ...options,
    noEmit: true,
    baseUrl: REPOSITORY_ROOT,
    paths: {
      'nestjs-outbox': ['lib/index.ts'],
      'nestjs-outbox/admin': ['lib/entries/admin.ts'],
      'nestjs-outbox/transports': ['lib/entries/transports.ts'],
      'nestjs-outbox/webhooks': ['lib/entries/webhooks.ts'],
      'nestjs-outbox/*': ['lib/*/index.ts'],
      '@nestjs/config': ['test/support/stubs/nestjs-config.ts'],
    },
  };
}

describe.each(['docs/configuration.md'])('the compiled examples of %s', (doc) => {
  const examples = docExamples(doc);

  it('are there, one file each', () => {
    const files = examples.map((example) => example.file);
    expect(files.length).toBeGreaterThan(0);
    expect(new Set(files).size).toBe(files.length);
  });

  it('type-check against the library', () => {
    const directory = mkdtempSync(join(REPOSITORY_ROOT, '.doc-examples-'));
    try {
      const files = examples.map(({ file, code }) => {
        const path = join(directory, file);
        writeFileSync(path, `${code}\n`);
        return path;
      });
      const program = ts.createProgram(files, compilerOptions());
      const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => !d.file || d.file.fileName.startsWith(directory));
      const report = ts.formatDiagnostics(diagnostics, {
        getCanonicalFileName: (name) => name,
        getCurrentDirectory: () => REPOSITORY_ROOT,
        getNewLine: () => '\n',
      });
      expect(report).toBe('');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  }, 180_000);
});
