/**
 * A `.ts` loader for the tests' child processes (`node -r ./test/support/cached-transpile.js …`):
 * what `ts-node/register/transpile-only` does (TypeScript's `transpileModule`, the repository's
 * tsconfig), with each file's output kept in `node_modules/.cache` and keyed by its content.
 * A child started from the loader transpiled the library, its fixtures and their imports anew,
 * about 3 s of CPU a start; the suite starts over a hundred of them. With the outputs kept, only
 * the first child after a change transpiles, and TypeScript itself is loaded only then.
 *
 * Plain JavaScript, so that it needs no loader of its own. Outputs carry inline source maps, and
 * source maps are turned on, so stack traces name the `.ts` lines as under ts-node.
 */
'use strict';

const { createHash } = require('node:crypto');
const { mkdirSync, readFileSync, renameSync, writeFileSync } = require('node:fs');
const { join, resolve } = require('node:path');

const ROOT = resolve(__dirname, '../..');
const CACHE = join(ROOT, 'node_modules/.cache/nestjs-outbox-transpile');
const TSCONFIG = join(ROOT, 'tsconfig.json');

let compiler;

/** TypeScript and the compiler options, loaded on the first file not in the cache. */
function loadCompiler() {
  if (compiler) return compiler;
  const ts = require('typescript');
  const { config, error } = ts.readConfigFile(TSCONFIG, ts.sys.readFile);
  if (error) throw new Error(`cached-transpile: ${TSCONFIG}: ${ts.flattenDiagnosticMessageText(error.messageText, '\n')}`);
  const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions, ROOT);
  compiler = { ts, options: { ...options, module: ts.ModuleKind.CommonJS, sourceMap: false, inlineSourceMap: true, inlineSources: true, declaration: false } };
  return compiler;
}

/** What decides a file's output besides its own text: the compiler's version and options. */
const SETTINGS = (() => {
  const version = require('typescript/package.json').version;
  return `${version}\n${readFileSync(TSCONFIG, 'utf8')}\n${readFileSync(__filename, 'utf8')}`;
})();

function transpiled(filename, source) {
  const key = createHash('sha256').update(SETTINGS).update('\0').update(filename).update('\0').update(source).digest('hex');
  const file = join(CACHE, `${key}.js`);
  try {
    return readFileSync(file, 'utf8');
  } catch {
    const { ts, options } = loadCompiler();
    const output = ts.transpileModule(source, { compilerOptions: options, fileName: filename, reportDiagnostics: false }).outputText;
    // Written aside, then renamed: a process reading it meanwhile finds the whole file or none.
    mkdirSync(CACHE, { recursive: true });
    const partial = `${file}.${process.pid}.tmp`;
    writeFileSync(partial, output);
    renameSync(partial, file);
    return output;
  }
}

process.setSourceMapsEnabled(true);
require.extensions['.ts'] = function loadTypeScript(module, filename) {
  module._compile(transpiled(filename, readFileSync(filename, 'utf8')), filename);
};
