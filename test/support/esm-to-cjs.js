/**
 * Jest transform for ESM-only dependencies (Nest 12 ships `@nestjs/*` as ES modules).
 *
 * Node 20.19+ loads them from CommonJS itself (`require(esm)`), but Jest's own module loader
 * does that only on Node 24.9+; on older Node a test that imports `@nestjs/common` fails with
 * "Must use import to load ES Module". This rewrites such a file's `import`/`export` into
 * `require`/`exports` with TypeScript's transpiler (no type-checking), and leaves CommonJS files
 * (Nest 11) as they are. `import.meta` has no CommonJS meaning, so its uses in Nest's code
 * (`url`, `dirname`, `resolve`, and a module-level `require` made from `import.meta.url`) are
 * replaced by their CommonJS equivalents first.
 */
const { createHash } = require('node:crypto');
const { readFileSync } = require('node:fs');
const ts = require('typescript');

// Jest caches transformed files by this key: a change to this transform invalidates them.
const SELF = readFileSync(__filename, 'utf8');

const ESM_SYNTAX = /^\s*(import|export)\s/m;

/** `source` with each use of `import.meta` replaced by what means the same in a CommonJS module. */
function withoutImportMeta(source) {
  return source
    .replace(/^const require = createRequire\(import\.meta\.url\);$/m, '')
    .replace(/import\.meta\.url/g, "require('node:url').pathToFileURL(__filename).href")
    .replace(/import\.meta\.dirname/g, '__dirname')
    .replace(/import\.meta\.resolve\(/g, 'require.resolve(');
}

module.exports = {
  getCacheKey(source, filename) {
    return createHash('sha256').update(SELF).update(ts.version).update(filename).update(source).digest('hex');
  },
  process(source, filename) {
    if (!ESM_SYNTAX.test(source)) return { code: source };
    const { outputText, sourceMapText } = ts.transpileModule(withoutImportMeta(source), {
      fileName: filename,
      compilerOptions: {
        module: ts.ModuleKind.CommonJS,
        target: ts.ScriptTarget.ES2022,
        allowJs: true,
        esModuleInterop: true,
        sourceMap: true,
      },
    });
    return { code: outputText, map: sourceMapText };
  },
};
