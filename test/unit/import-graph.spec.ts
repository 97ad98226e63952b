import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

/**
 * The library's layers, lowest first: each folder of lib/ is one, and a file may import files of
 * its own folder and of lower ones, never of a higher one (ARCHITECTURE.md draws them). So the
 * folders form no cycle, and where a change belongs follows from what it needs.
 */
const LAYERS: readonly { layer: string; paths: readonly string[] }[] = [
  // Typed errors, thrown from every layer: they import nothing of the library.
  { layer: 'errors', paths: ['errors/'] },
  // A message's data from publish() to the wire: shape, status, limits, text, and the transport contract.
  { layer: 'message', paths: ['message/'] },
  // Backoff, and which errors are worth a retry.
  { layer: 'retry', paths: ['retry/'] },
  // The events, spans and metric names each layer above reports to.
  { layer: 'observability', paths: ['observability/'] },
  // Names: of outboxes, tables and indexes, and the injection tokens inside one outbox.
  { layer: 'naming', paths: ['naming/'] },
  // The module's options, their defaults and their checks.
  { layer: 'options', paths: ['options/'] },
  // The dialect-neutral state machine and claim worker; it defines the interfaces it needs.
  { layer: 'engine', paths: ['engine/'] },
  // SQL per database, implementing the engine's interfaces.
  { layer: 'dialects', paths: ['dialects/'] },
  // The tables: start-up checks and creation, migrations; then the TypeORM read models.
  { layer: 'schema', paths: ['schema/'] },
  { layer: 'entities', paths: ['entities/'] },
  // The ways out: RabbitMQ, HTTP, a Nest ClientProxy.
  { layer: 'transport', paths: ['transport/'] },
  // The features, each over the ones before it: the inbox, the outbox (whose dispatcher wakes
  // the inbox's deferred work), webhooks (a second inbox entry point), then the jobs that watch them.
  { layer: 'inbox', paths: ['inbox/'] },
  { layer: 'outbox', paths: ['outbox/'] },
  { layer: 'webhooks', paths: ['webhooks/'] },
  { layer: 'maintenance', paths: ['maintenance/'] },
  // What operators read and do, and the metrics made of it.
  { layer: 'admin', paths: ['admin/'] },
  { layer: 'metrics', paths: ['metrics/'] },
  // What assembles the features: the module, the tokens of each outbox's services, the public API.
  { layer: 'module', paths: ['module/', 'index.ts'] },
  // The entry files of the subpaths over the same features: nestjs-outbox/admin, /transports, /webhooks.
  { layer: 'entries', paths: ['entries/'] },
  // The subpaths and the command line, each built on the module.
  { layer: 'health', paths: ['health/'] },
  { layer: 'testing', paths: ['testing/'] },
  { layer: 'cli', paths: ['cli/'] },
  { layer: 'board', paths: ['board/'] }, // the web board: pages over the admin service, with the CLI's filters
];

const LIB = path.resolve(__dirname, '../../lib');

/** Every file's relative imports that resolve to a file under `root`, by path relative to `root`. */
type ImportGraph = Map<string, string[]>;

/**
 * The import graph of the .ts files under `root`. `import type` counts like any import: a layer
 * that names a higher layer's type depends on it as much as on its values (and with
 * `isolatedModules` an untyped `import { T }` of a type is erased too, so the emitted code would
 * not tell the two apart anyway); a cycle through types still makes files that cannot be read
 * apart. `export ... from`, `import()` and `require()` count as well.
 */
function importGraph(root: string): ImportGraph {
  const files = tsFiles(root);
  const graph: ImportGraph = new Map();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
    const targets = importedFiles.filter(({ fileName }) => fileName.startsWith('.')).map(({ fileName }) => resolveImport(file, fileName, root));
    graph.set(
      path.relative(root, file),
      targets.filter((target): target is string => target !== undefined),
    );
  }
  return graph;
}

function tsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** The file under `root` that `specifier` names from `from`; undefined for one outside (package.json). */
function resolveImport(from: string, specifier: string, root: string): string | undefined {
  const base = path.resolve(path.dirname(from), specifier);
  if (path.relative(root, base).startsWith('..')) return undefined;
  const found = [`${base}.ts`, path.join(base, 'index.ts'), base].find((candidate) => candidate.endsWith('.ts') && fs.existsSync(candidate));
  if (!found) throw new Error(`${path.relative(root, from)} imports ${specifier}, which is no .ts file under lib/`);
  return path.relative(root, found);
}

/** Each import cycle, as the chain of files that closes it (`a.ts -> b.ts -> a.ts`). */
function importCycles(graph: ImportGraph): string[] {
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string): void => {
    state.set(file, 'open');
    stack.push(file);
    for (const target of graph.get(file) ?? []) {
      if (state.get(target) === 'open') cycles.push([...stack.slice(stack.indexOf(target)), target].join(' -> '));
      else if (!state.has(target)) visit(target);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return cycles;
}

/** The index in `LAYERS` of the layer of `file`, or undefined when no path of the table matches it. */
function layerOf(file: string, layers = LAYERS): number | undefined {
  let best: { index: number; length: number } | undefined;
  layers.forEach(({ paths }, index) => {
    for (const entry of paths) {
      const matches = entry.endsWith('/') ? file.startsWith(entry) : file === entry;
      if (matches && (!best || entry.length > best.length)) best = { index, length: entry.length };
    }
  });
  return best?.index;
}

/** Each import from a lower layer into a higher one, with both layers named. */
function layerViolations(graph: ImportGraph, layers = LAYERS): string[] {
  const violations: string[] = [];
  for (const [file, targets] of graph) {
    const from = layerOf(file, layers);
    for (const target of targets) {
      const to = layerOf(target, layers);
      if (from !== undefined && to !== undefined && to > from) violations.push(`${file} (${layers[from].layer}) imports ${target} (${layers[to].layer})`);
    }
  }
  return violations.sort();
}

describe('the import graph of lib/', () => {
  const graph = importGraph(LIB);

  it('reads the whole library', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get('index.ts')).toContain('module/outbox.module.ts');
  });

  it('gives every file a layer', () => {
    expect([...graph.keys()].filter((file) => layerOf(file) === undefined)).toEqual([]);
  });

  it('has no import cycles', () => {
    expect(importCycles(graph)).toEqual([]);
  });

  it('has no import from a higher layer', () => {
    expect(layerViolations(graph)).toEqual([]);
  });
});

describe('the import graph checks', () => {
  const layers = [
    { layer: 'low', paths: ['low/'] },
    { layer: 'high', paths: ['high/', 'low/exception.ts'] },
  ];

  it('find a cycle and name its files in order', () => {
    const graph: ImportGraph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
    ]);
    expect(importCycles(graph)).toEqual(['a.ts -> b.ts -> c.ts -> a.ts']);
  });

  it('find an import that climbs a layer, and take a file listed alone over its folder', () => {
    const graph: ImportGraph = new Map([
      ['low/a.ts', ['high/b.ts']],
      ['high/b.ts', ['low/a.ts']],
      ['low/exception.ts', ['high/b.ts']],
    ]);
    expect(layerViolations(graph, layers)).toEqual(['low/a.ts (low) imports high/b.ts (high)']);
  });
});
