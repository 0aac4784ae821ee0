// Regenerates clients/typescript/src/types.ts from the app's own OpenAPI document, built in process.
// `npm run client:types`; test/client/types-match-the-document.test.ts fails when the committed file is stale.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { clientTypesText } from './client-types-text.ts';

const target = fileURLToPath(new URL('../clients/typescript/src/types.ts', import.meta.url));
writeFileSync(target, await clientTypesText());
console.log(`wrote ${target}`);
