import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import { CLIENT_TYPES_PATH, clientTypesText } from '../../scripts/client-types-text.ts';

it('the committed client types match the OpenAPI document', async () => {
  const committed = readFileSync(new URL(`../../${CLIENT_TYPES_PATH}`, import.meta.url), 'utf8');
  const fresh = await clientTypesText();
  assert.ok(
    committed === fresh,
    `${CLIENT_TYPES_PATH} is stale: the OpenAPI document changed. Run \`npm run client:types\` and commit the result.`,
  );
});
