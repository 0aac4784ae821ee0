/** Businesses and their API keys, from the command line. */
import { findKeyBusiness, listApiKeys } from '../businesses/repository.ts';
import { createApiKey, openBusiness, revokeApiKey, setKeyAllowlist } from '../businesses/service.ts';
import { parseScopes } from '../businesses/scopes.ts';
import { parseCidrs } from '../businesses/allowlist.ts';
import { keyFormat } from '../businesses/key-format.ts';
import { MALFORMED_KEY_HINT } from '../lib/errors.ts';
import { CLI } from '../write/runner.ts';
import {
  CliError,
  json,
  printJson,
  printLines,
  printTable,
  requireBusiness,
  usage,
  UsageError,
  type Command,
} from './command.ts';

export const businessCommands: Record<string, Command> = {
  'business create': {
    creates: true,
    usage: 'business create --name NAME [--json]   create a business and its first API key',
    options: { name: { type: 'string' }, ...json },
    required: ['name'],
    async run({ writes }, values) {
      const name = String(values.name).trim();
      if (name === '') throw new UsageError('--name must not be empty');
      const created = await openBusiness(writes, name, CLI);
      if (values.json) return printJson({ businessId: created.businessId, apiKey: created.apiKey });
      printLines(
        `Created business ${created.businessId} (${name}).`,
        'Its API key is shown only this once; store it now:',
        `  X-Business-Id: ${created.businessId}`,
        `  X-API-Key:     ${created.apiKey}`,
        `  (key id ${created.keyId}, for revoking it later)`,
      );
    },
  },
  'key create': {
    usage:
      'key create --business ID [--scopes S] [--allow CIDRS] [--json]   add an API key to a business; --scopes orders:write,items:read ' +
      'limits what it may do (default: every scope), --allow 203.0.113.0/24,2001:db8::/32 where from (default: anywhere)',
    options: { business: { type: 'string' }, scopes: { type: 'string' }, allow: { type: 'string' }, ...json },
    required: ['business'],
    async run({ db, writes }, values) {
      const scopes = values.scopes === undefined ? null : usage(() => parseScopes(String(values.scopes)));
      const allowedCidrs = values.allow === undefined ? null : usage(() => parseCidrs(String(values.allow)));
      const businessId = await requireBusiness(db, String(values.business));
      const key = await writes.run({ businessId, actor: CLI }, (ctx) => createApiKey(ctx, { scopes, allowedCidrs }));
      if (values.json) return printJson({ businessId, keyId: key.keyId, apiKey: key.apiKey, scopes, allowedCidrs });
      printLines(
        `Created key ${key.keyId} for business ${businessId}${scopes ? ` with the scopes ${scopes.join(',')}` : ' with every scope'}` +
          `${allowedCidrs ? `, usable from ${allowedCidrs.join(',')} only` : ''}.`,
        'The API key is shown only this once; store it now:',
        `  X-API-Key: ${key.apiKey}`,
      );
    },
  },
  'key list': {
    usage: "key list --business ID [--json]        list a business's API keys (never the keys themselves)",
    options: { business: { type: 'string' }, ...json },
    required: ['business'],
    async run({ db }, values) {
      const businessId = await requireBusiness(db, String(values.business));
      const keys = await listApiKeys(db, businessId);
      if (values.json) return printJson(keys);
      if (keys.length === 0) return printLines(`Business ${businessId} has no API keys.`);
      printTable(
        ['ID', 'PREFIX', 'SCOPES', 'ALLOWED FROM', 'CREATED', 'LAST USED', 'EXPIRES', 'REVOKED'],
        keys.map((k) => [
          k.id,
          k.prefix,
          k.scopes ? k.scopes.join(',') : 'all',
          k.allowedCidrs ? k.allowedCidrs.join(',') : 'anywhere',
          k.createdAt,
          k.lastUsedAt ?? '-',
          k.expiresAt ?? '-',
          k.revokedAt ?? '-',
        ]),
      );
    },
  },
  'key allow': {
    usage:
      'key allow --key-id ID (--cidrs CIDRS | --anywhere)   where a key may be used from: 203.0.113.0/24,2001:db8::/32, or anywhere',
    options: { 'key-id': { type: 'string' }, cidrs: { type: 'string' }, anywhere: { type: 'boolean' } },
    required: ['key-id'],
    async run({ db, writes }, values) {
      if ((values.cidrs === undefined) === (values.anywhere === undefined))
        throw new UsageError('Give either --cidrs or --anywhere');
      const cidrs = values.cidrs === undefined ? null : usage(() => parseCidrs(String(values.cidrs)));
      const keyId = String(values['key-id']);
      const businessId = await findKeyBusiness(db, keyId);
      const set =
        businessId !== undefined &&
        (await writes.run({ businessId, actor: CLI }, (ctx) => setKeyAllowlist(ctx, keyId, cidrs)));
      if (!set) throw new CliError(`Key ${keyId} not found, or revoked`);
      printLines(
        `Key ${keyId} may be used from ${cidrs ? cidrs.join(',') : 'anywhere'}. Every instance holds this within 5 seconds.`,
      );
    },
  },
  'key check': {
    usage: 'key check KEY                          whether KEY is well formed (offline: its checksum, no database)',
    options: {},
    required: [],
    positional: 'KEY',
    async alone(_databaseUrl, [key]) {
      const format = keyFormat(key);
      if (format === 'malformed')
        throw new CliError(
          `Malformed: ${MALFORMED_KEY_HINT.replace(/^The X-API-Key is malformed \(a typo\?\): /, '')}.`,
        );
      printLines(
        format === 'current'
          ? `Well formed: an ${key.slice(0, 8)} key${key.startsWith('sl_test_') ? " (a sandbox's)" : ''} ` +
              'whose checksum is right. Whether it is live, only the service can say.'
          : 'Well formed: a key of the format before 2026-11-28 (32 hex characters), which keeps working.',
      );
    },
  },
  'key revoke': {
    usage: 'key revoke --key-id ID                 revoke an API key',
    options: { 'key-id': { type: 'string' } },
    required: ['key-id'],
    async run({ db, writes }, values) {
      const keyId = String(values['key-id']);
      const businessId = await findKeyBusiness(db, keyId);
      const revoked =
        businessId !== undefined && (await writes.run({ businessId, actor: CLI }, (ctx) => revokeApiKey(ctx, keyId)));
      if (!revoked) throw new CliError(`Key ${keyId} not found`);
      // Instances cache verified keys briefly (config.authCacheMs), so say when it really stops working.
      printLines(`Revoked key ${keyId}. Revocation takes effect on every instance within 5 seconds.`);
    },
  },
};
