// Writes the app's OpenAPI document to the file named by the first argument (stdout without one).
import { writeFileSync } from 'node:fs';
import { buildOpenapiDocument } from '../src/http/openapi-document.ts';

const text = `${JSON.stringify(await buildOpenapiDocument(), null, 2)}\n`;
if (process.argv[2]) writeFileSync(process.argv[2], text);
else process.stdout.write(text);
