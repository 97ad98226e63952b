import { existsSync } from 'node:fs';
import { dirname, extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DataSource } from 'typeorm';
import { CliUsageError } from './cli-usage.error';

const TYPESCRIPT_EXTENSIONS = ['.ts', '.cts'];

/**
 * A native `import()`: TypeScript compiling to CommonJS would turn a literal one into `require`,
 * which cannot load an ES module file.
 */
// eslint-disable-next-line @typescript-eslint/no-implied-eval -- the one way to a native import() in CommonJS output
const importModule = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<Record<string, unknown>>;

/**
 * The DataSource a file exports, as TypeORM's CLI finds it: the module itself, or its one
 * DataSource among its exports (the default export or a named one, awaited when it is a promise).
 * A TypeScript file is loaded through ts-node, registered from the application's own
 * dependencies unless a loader for `.ts` is registered already (`node -r ts-node/register`).
 */
export async function loadDataSourceFile(file: string): Promise<DataSource> {
  const path = resolve(file);
  if (!existsSync(path)) throw new CliUsageError(`the DataSource file ${file} does not exist (resolved to ${path})`);
  if (TYPESCRIPT_EXTENSIONS.includes(extname(path))) registerTypeScript(path);
  let exported: unknown;
  try {
    exported = await loadModule(path);
  } catch (error) {
    throw new Error(`cannot load the DataSource file ${file}: ${(error as Error).message}`, { cause: error });
  }
  if (isDataSource(exported)) return ofThisTypeorm(exported, file);
  const found = new Map<DataSource, string>();
  if (exported !== null && typeof exported === 'object') {
    for (const [name, value] of Object.entries(exported)) {
      const awaited = await value;
      if (isDataSource(awaited) && !found.has(awaited)) found.set(awaited, name);
    }
  }
  if (found.size === 0)
    throw new CliUsageError(
      `${file} exports no DataSource: export a TypeORM DataSource instance (the default export or a named one), as TypeORM's CLI expects`,
    );
  if (found.size > 1) throw new CliUsageError(`${file} exports several DataSources (${[...found.values()].join(', ')}): give a file that exports one`);
  return ofThisTypeorm([...found.keys()][0], file);
}

/**
 * The library's statements tell a DataSource from an EntityManager with `instanceof`, so the
 * DataSource must come from the copy of TypeORM the library loads (its peer dependency).
 */
function ofThisTypeorm(dataSource: DataSource, file: string): DataSource {
  if (dataSource instanceof DataSource) return dataSource;
  throw new CliUsageError(
    `the DataSource of ${file} comes from another copy of typeorm than the one nestjs-outbox loads: run the nestjs-outbox installed in the application (npx nestjs-outbox …)`,
  );
}

async function loadModule(path: string): Promise<unknown> {
  if (extname(path) === '.mjs') return importModule(pathToFileURL(path).href);
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the user's file, named at run time
    return require(path);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ERR_REQUIRE_ESM' || code === 'ERR_REQUIRE_ASYNC_MODULE') return importModule(pathToFileURL(path).href);
    throw error;
  }
}

/** Registers ts-node as TypeORM's `typeorm-ts-node-commonjs` does, found from the file's directory or the working directory. */
function registerTypeScript(path: string): void {
  if (require.extensions['.ts']) return;
  let tsNode: string;
  try {
    tsNode = require.resolve('ts-node', { paths: [dirname(path), process.cwd()] });
  } catch {
    throw new CliUsageError(
      `${path} is TypeScript, and ts-node is not installed: install it (npm install --save-dev ts-node), compile the file and give the .js,` +
        ' or run the CLI under a loader of your own (node -r ts-node/register node_modules/.bin/nestjs-outbox …)',
    );
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- ts-node, an optional dependency of the user's
  (require(tsNode) as { register(): void }).register();
}

/** A DataSource of any copy of TypeORM, which marks its instances (as its own CLI checks them). */
function isDataSource(value: unknown): value is DataSource {
  return value !== null && typeof value === 'object' && (value as Record<string, unknown>)['@instanceof'] === Symbol.for('DataSource');
}
