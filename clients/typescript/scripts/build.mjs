// Builds ESM (dist/esm) and CommonJS (dist/cjs), each with its declarations: tsc twice, at once.
// dist/cjs gets a package.json of its own, so that Node and TypeScript read its .js and .d.ts as CommonJS.
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';

const root = new URL('..', import.meta.url);
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync(new URL('dist', root), { recursive: true, force: true });
await Promise.all(
  ['tsconfig.json', 'tsconfig.cjs.json'].map((config) =>
    promisify(execFile)(process.execPath, [tsc, '-p', config], { cwd: root }).catch((error) => {
      console.error(error.stdout || error.message);
      process.exit(1);
    }),
  ),
);
mkdirSync(new URL('dist/cjs', root), { recursive: true });
writeFileSync(new URL('dist/cjs/package.json', root), '{"type":"commonjs"}\n');
