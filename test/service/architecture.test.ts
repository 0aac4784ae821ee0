import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, it } from 'node:test';

/**
 * The shape of the code (docs/architecture.md), checked on the source text so that it stays
 * true: one place opens a write transaction, dialect questions are asked in src/db only, the
 * domain does not import the HTTP edge, and migrations are frozen.
 */
const SRC = join(import.meta.dirname, '..', '..', 'src');

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : entry.name.endsWith('.ts') ? [path] : [];
  });
}

const files = sourceFiles().map((path) => ({
  path: relative(SRC, path).replaceAll('\\', '/'),
  text: readFileSync(path, 'utf8'),
}));

/** The files (relative to src/) that a file imports from src/. */
function importsOf(file: { path: string; text: string }): string[] {
  return [...file.text.matchAll(/(?:from|import\()\s*'(\.[^']+)'/g)].map((m) =>
    normalize(join(dirname(file.path), m[1])).replaceAll('\\', '/'),
  );
}

/** The files a file imports for their values: `import type` and `{ type X }`-only imports are left out. */
function valueImportsOf(file: { path: string; text: string }): string[] {
  return [...file.text.matchAll(/^import\s+(type\s+)?([^;]*?)from\s+'(\.[^']+)'/gms)]
    .filter(([, type, names]) => !type && !/^\{(\s*type\s+[^,}]+,?)+\s*\}\s*$/.test(names.trim()))
    .map((m) => normalize(join(dirname(file.path), m[3])).replaceAll('\\', '/'));
}

/** A file's part: its folder under src/, or the file itself at the top. */
const partOf = (path: string) => path.split('/')[0];

describe('architecture', () => {
  it('opens write transactions in one place: the write runner (and its groups, which only it uses)', () => {
    const opening = files.filter((f) => /\.transaction\(\)/.test(f.text) && !f.path.startsWith('db/migrations/'));
    assert.deepEqual(
      opening.map((f) => f.path),
      ['db/dialect.ts', 'write/groups.ts', 'write/runner.ts'],
    );
    assert.deepEqual(
      files.filter((f) => importsOf(f).includes('write/groups.ts')).map((f) => f.path),
      ['write/runner.ts'],
    );
    // src/db/dialect.ts opens read-only transactions only (readAtOneMoment).
    const inDialect = files
      .find((f) => f.path === 'db/dialect.ts')!
      .text.split('\n')
      .filter((line) => line.includes('.transaction()'));
    assert.ok(
      inDialect.length > 0 && inDialect.every((line) => line.includes(".setAccessMode('read only')")),
      inDialect.join('\n'),
    );
  });

  it('lets API routes write one way: runWrite (src/http/write.ts), never the runner itself', () => {
    const routes = files.filter((f) => /import type \{[^}]*\bRouteDeps\b/.test(f.text) && f.path.includes('/'));
    assert.ok(routes.length >= 8);
    const offending = routes.filter((f) => /\bwrites\.|\.runIdempotent\(|createWriteRunner/.test(f.text));
    assert.deepEqual(
      offending.map((f) => f.path),
      [],
    );
  });

  it('imports a database driver only in src/db', () => {
    const drivers = files.filter(
      (f) => !f.path.startsWith('db/') && /(?:from|import\(|require\()\s*'(?:pg|better-sqlite3(?:-12)?)'/.test(f.text),
    );
    assert.deepEqual(
      drivers.map((f) => f.path),
      [],
    );
  });

  it('branches on the dialect only in src/db', () => {
    const branching = files.filter(
      (f) =>
        !f.path.startsWith('db/') &&
        /dialectOf\(|PostgresAdapter|SqliteAdapter|=== 'postgres'|=== 'sqlite'/.test(f.text),
    );
    assert.deepEqual(
      branching.map((f) => f.path),
      [],
    );
  });

  it('enters the order read model through its front door, src/orders/read-model/index.ts (its table types aside)', () => {
    const inside = (path: string) => path.startsWith('orders/read-model/');
    const through = files
      .filter((f) => !inside(f.path))
      .flatMap((f) =>
        valueImportsOf(f)
          .filter((i) => inside(i) && i !== 'orders/read-model/index.ts')
          .map((i) => `${f.path} -> ${i}`),
      );
    assert.deepEqual(through, []);
  });

  it('has no import cycle', () => {
    const graph = new Map(files.map((f) => [f.path, importsOf(f).filter((i) => i.endsWith('.ts'))]));
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (path: string, trail: string[]) => {
      if (state.get(path) === 'done') return;
      if (state.get(path) === 'open') {
        cycles.push([...trail.slice(trail.indexOf(path)), path].join(' -> '));
        return;
      }
      state.set(path, 'open');
      for (const next of graph.get(path) ?? []) visit(next, [...trail, path]);
      state.set(path, 'done');
    };
    for (const path of graph.keys()) visit(path, []);
    assert.deepEqual(cycles, []);
  });

  it('stacks its parts in layers: no value import runs from a part back up to one that imports it', () => {
    const graph = new Map<string, Set<string>>();
    for (const f of files.filter((f) => !f.path.startsWith('db/migrations/'))) {
      for (const target of valueImportsOf(f)) {
        const [from, to] = [partOf(f.path), partOf(target)];
        if (from !== to) graph.set(from, (graph.get(from) ?? new Set()).add(to));
      }
    }
    assert.ok(graph.get('write')?.has('log'), 'the write runner appends through src/log');
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (part: string, trail: string[]) => {
      if (state.get(part) === 'done') return;
      if (state.get(part) === 'open') {
        cycles.push([...trail.slice(trail.indexOf(part)), part].join(' -> '));
        return;
      }
      state.set(part, 'open');
      for (const next of graph.get(part) ?? []) visit(next, [...trail, part]);
      state.set(part, 'done');
    };
    for (const part of graph.keys()) visit(part, []);
    assert.deepEqual(cycles, []);
  });

  it('keeps services, repositories and mappers free of the HTTP edge', () => {
    const domain = files.filter(
      (f) =>
        /(service|repository|mapper|render|read-model\/[a-z-]+)\.ts$/.test(f.path) ||
        f.path.startsWith('write/') ||
        f.path.startsWith('log/'),
    );
    assert.ok(domain.length > 15, 'the domain files are found');
    const offending = domain.flatMap((f) =>
      importsOf(f)
        .filter((i) => i.startsWith('http/'))
        .map((i) => `${f.path} imports ${i}`),
    );
    assert.deepEqual(offending, []);
  });

  it('keeps migrations frozen: they import nothing outside src/db', () => {
    const migrations = files.filter((f) => f.path.startsWith('db/migrations/'));
    assert.ok(migrations.length >= 8);
    const offending = migrations.flatMap((f) =>
      importsOf(f)
        .filter((i) => !i.startsWith('db/'))
        .map((i) => `${f.path} imports ${i}`),
    );
    assert.deepEqual(offending, []);
  });

  it('keeps lines to 140 characters (STYLE.md); released migrations stay as they were', () => {
    const long = files
      .filter((f) => !f.path.startsWith('db/migrations/'))
      .flatMap((f) => f.text.split('\n').flatMap((line, i) => (line.length > 140 ? [`${f.path}:${i + 1}`] : [])));
    assert.deepEqual(long, []);
  });

  it('writes soft-delete conditions through whereLive()', () => {
    const handWritten = files.filter(
      (f) =>
        !f.path.startsWith('db/migrations/') &&
        f.path !== 'db/live.ts' &&
        /deleted_at', 'is', null|deleted_at is null/.test(f.text),
    );
    assert.deepEqual(
      handWritten.map((f) => f.path),
      [],
    );
  });

  it("takes every write's time from its context, never the machine clock directly", () => {
    const direct = files.filter((f) => /new Date\(\)\.toISOString\(\)|nowIso\(\)/.test(f.text));
    assert.deepEqual(
      direct.map((f) => f.path),
      [],
    );
  });

  it('sends nothing through the pool that outlives its transaction (docs/operations.md, "Behind a pooler")', () => {
    // The transaction-level forms (pg_advisory_xact_lock, SET LOCAL, set_config(…, true)) end with it.
    const sessionState = [
      /pg_(?:try_)?advisory_(?:un)?lock(?:_shared)?\(/,
      /set_config\([^)]*,\s*false\s*\)/i,
      /create\s+temp(?:orary)?\s+table/i,
      /[`'"]\s*(?:set|reset)\s+(?!local\b)(?:session\s+)?[a-z_.]+\s*(?:=|to\b)/i,
      /[`'"]\s*(?:listen|prepare|declare)\s/i,
    ];
    // The listener's LISTEN runs on a connection of its own, not from the pool.
    const offending = files.filter((f) => f.path !== 'db/listen.ts' && sessionState.some((p) => p.test(f.text)));
    assert.deepEqual(
      offending.map((f) => f.path),
      [],
    );
    assert.ok(sessionState.at(-1)!.test(files.find((f) => f.path === 'db/listen.ts')!.text));
  });
  it('runs every test file: each is named by a glob of `npm test`, test:reliability or test:memory', () => {
    const root = join(import.meta.dirname, '..', '..');
    const scripts = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts as Record<string, string>;
    const globs = ['test', 'test:reliability', 'test:memory'].flatMap(
      (name) => scripts[name].match(/test\/\S+\.test\.ts/g) ?? [],
    );
    const covers = (glob: string, file: string) =>
      new RegExp(`^${glob.replaceAll('.', '\\.').replaceAll('*', '[^/]*')}$`).test(file);
    const testFiles = (dir: string): string[] =>
      readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory()
          ? testFiles(`${dir}/${entry.name}`)
          : entry.name.endsWith('.test.ts')
            ? [`${dir}/${entry.name}`]
            : [],
      );
    const missed = testFiles('test').filter((file) => !globs.some((glob) => covers(glob, file)));
    assert.deepEqual(
      missed,
      [],
      'test files no script runs (CI runs `npm test` and the reliability and memory suites)',
    );
  });
});
