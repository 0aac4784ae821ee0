// Builds ESM (dist/esm) and CommonJS (dist/cjs), each with its declarations, by running tsc twice.
// dist/cjs gets a package.json of its own, so that Node and TypeScript read its .js and .d.ts as CommonJS.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const root = new URL('..', import.meta.url);
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync(new URL('dist', root), { recursive: true, force: true });
for (const config of ['tsconfig.json', 'tsconfig.cjs.json']) {
  execFileSync(process.execPath, [tsc, '-p', config], { cwd: root, stdio: 'inherit' });
}
mkdirSync(new URL('dist/cjs', root), { recursive: true });
writeFileSync(new URL('dist/cjs/package.json', root), '{"type":"commonjs"}\n');
