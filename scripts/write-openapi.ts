// Writes the app's OpenAPI document to the file named by the first argument (stdout without one).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { buildOpenapiDocument } from './openapi-document.ts';

const text = `${JSON.stringify(await buildOpenapiDocument(), null, 2)}\n`;
if (process.argv[2]) {
  mkdirSync(dirname(process.argv[2]), { recursive: true });
  writeFileSync(process.argv[2], text);
} else process.stdout.write(text);
