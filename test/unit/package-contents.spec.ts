import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

/**
 * What a user holding only the packed package gets: its manifest, its file list, the links in its
 * documents and the types its entry points declare. The fresh-app CI step (.ci/fresh-app/run)
 * installs and compiles the same tarball; these checks say why when one of its parts is wrong.
 */
const ROOT = path.resolve(__dirname, '../..');
const REPOSITORY = 'https://github.com/nestjs-outbox/nestjs-outbox';

interface Manifest {
  name: string;
  version: string;
  scripts: Record<string, string>;
  exports: Record<string, string | { types?: string; default: string }>;
  typesVersions?: Record<string, Record<string, string[]>>;
  homepage?: string;
  repository?: { type: string; url: string };
  bugs?: { url: string };
  files: string[];
}

const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Manifest;

/** The files `npm pack` puts in the tarball, without running its build (dist/ is listed by its own rule). */
function packedFiles(): string[] {
  const output = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
  const [pack] = JSON.parse(output) as { files: { path: string }[] }[];
  return pack.files.map((file) => file.path);
}

describe('the package manifest', () => {
  it('runs nothing when a user installs the tarball, so npm asks no allowScripts entry for it', () => {
    // npm runs `prepare` of a tarball or git dependency and warns that it is not in
    // allowScripts; the build belongs to `prepack`, which only `npm pack` and `npm publish` run.
    for (const script of ['preinstall', 'install', 'postinstall', 'prepare']) expect(manifest.scripts).not.toHaveProperty(script);
    expect(manifest.scripts.prepack).toBe('npm run build');
  });

  it('maps each subpath to its types for node10 resolution too (`"module": "commonjs"`)', () => {
    // node10 resolution ignores `exports`: without `typesVersions`, `nestjs-outbox/testing` is TS2307.
    const subpaths = Object.entries(manifest.exports).filter(([subpath, target]) => subpath !== '.' && typeof target !== 'string');
    expect(subpaths.map(([subpath]) => subpath)).toEqual(['./admin', './transports', './webhooks', './testing', './health', './board']);
    for (const [subpath, target] of subpaths) {
      const types = (target as { types: string }).types.replace(/^\.\//, '');
      expect(manifest.typesVersions?.['*']?.[subpath.slice(2)]).toEqual([types]);
    }
  });

  it('names its repository, home page and issue tracker', () => {
    expect(manifest.repository).toEqual({ type: 'git', url: `git+${REPOSITORY}.git` });
    expect(manifest.homepage).toBe(`${REPOSITORY}#readme`);
    expect(manifest.bugs).toEqual({ url: `${REPOSITORY}/issues` });
  });
});

describe('the README install section', () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const install = readme.slice(readme.indexOf('## Install\n'), readme.indexOf('\n## ', readme.indexOf('## Install\n') + 1));

  it('installs what works first: the packed tarball, not a registry name that is not published', () => {
    const firstInstall = /npm install ([^\n]*)/.exec(install)?.[1] ?? '';
    expect(firstInstall.split(' ')[0]).toBe(`./${manifest.name}-${manifest.version}.tgz`);
    expect(install).not.toMatch(/npm install nestjs-outbox\b/);
  });
});

describe('the packed files', () => {
  const files = new Set(packedFiles());

  it('ship the docs the README links to', () => {
    expect(files).toContain('README.md');
    expect([...files].filter((file) => file.startsWith('docs/')).length).toBeGreaterThan(0);
  });

  it('hold every relative link of the README and docs, and link elsewhere only to the repository', () => {
    const documents = [...files].filter((file) => file.endsWith('.md'));
    const dead: string[] = [];
    for (const document of documents) {
      const text = fs.readFileSync(path.join(ROOT, document), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:)/.test(target)) {
          if (target.startsWith('https://github.com/') && !target.startsWith(`${REPOSITORY}/`)) dead.push(`${document}: ${target}`);
          continue;
        }
        const file = target.split('#')[0];
        if (file === '') continue;
        const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(document), file));
        if (!files.has(resolved) && ![...files].some((packed) => packed.startsWith(`${resolved}/`))) dead.push(`${document}: ${target}`);
      }
    }
    expect(dead).toEqual([]);
  });
});

describe('the build', () => {
  it('puts the TypeScript source in each source map, since lib/ is not shipped', () => {
    const build = JSON.parse(fs.readFileSync(path.join(ROOT, 'tsconfig.build.json'), 'utf8').replace(/^\s*\/\/.*$/gm, '')) as {
      compilerOptions: ts.CompilerOptions;
    };
    expect(build.compilerOptions.inlineSources).toBe(true);
  });
});

/** Modules of optional peers, which an application that does not use them has not installed. */
const OPTIONAL_PEERS = /^(amqplib|@golevelup\/|@nestjs\/microservices|@nestjs\/terminus|@opentelemetry\/)/;

/**
 * The declarations of lib/, emitted in memory, and the non-relative modules each one that is
 * reachable from `entry` imports (`from '…'` or `import('…')`).
 */
function optionalPeersInDeclarations(entries: string[]): string[] {
  const options: ts.CompilerOptions = {
    ...ts.parseJsonConfigFileContent(ts.readConfigFile(path.join(ROOT, 'tsconfig.build.json'), ts.sys.readFile).config, ts.sys, ROOT).options,
    declaration: true,
    emitDeclarationOnly: true,
    noEmit: false,
  };
  const emitted = new Map<string, string>();
  const program = ts.createProgram(
    entries.map((entry) => path.join(ROOT, 'lib', entry)),
    options,
  );
  program.emit(undefined, (fileName, text) => emitted.set(path.resolve(fileName), text), undefined, true);
  const dist = path.resolve(ROOT, 'dist');
  const found: string[] = [];
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = emitted.get(file);
    if (text === undefined) return;
    for (const [, specifier] of text.matchAll(/(?:from|import\()\s*['"]([^'"]+)['"]/g)) {
      if (specifier.startsWith('.')) {
        const base = path.resolve(path.dirname(file), specifier);
        visit(emitted.has(`${base}.d.ts`) ? `${base}.d.ts` : path.join(base, 'index.d.ts'));
      } else if (OPTIONAL_PEERS.test(specifier)) found.push(`${path.relative(dist, file)} imports ${specifier}`);
    }
  };
  for (const entry of entries) visit(path.join(dist, entry.replace(/\.ts$/, '.d.ts')));
  return found;
}

describe('the public declarations', () => {
  it('of the main entry, nestjs-outbox/testing, /admin and /webhooks need no optional peer installed', () => {
    expect(optionalPeersInDeclarations(['index.ts', 'testing/index.ts', 'entries/admin.ts', 'entries/webhooks.ts'])).toEqual([]);
  }, 120_000);
});
