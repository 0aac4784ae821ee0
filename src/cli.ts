import { parseArgs, type ParseArgsConfig } from 'node:util';
import { findBusiness, findKeyBusiness, listApiKeys } from './businesses/repository.ts';
import { createApiKey, openBusiness, revokeApiKey, setKeyAllowlist } from './businesses/service.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createDatabase, type DatabaseHandle } from './db/connection.ts';
import { migrateToLatest } from './db/migrate.ts';
import { backupSqlite } from './db/backup.ts';
import { parseScopes } from './businesses/scopes.ts';
import { parseCidrs } from './businesses/allowlist.ts';
import { keyFormat } from './businesses/key-format.ts';
import { DEMO_OPTIONS, runDemoCommand } from './demo/command.ts';
import { runImportCommand } from './imports/command.ts';
import type { Db } from './db/types.ts';
import { rebuildOrderProjections } from './orders/projections/index.ts';
import { listEvents } from './events/repository.ts';
import { CLI, createWriteRunner, type WriteRunner } from './write/runner.ts';
import { createUser, updateUser } from './users/service.ts';
import { listUsers } from './users/repository.ts';
import type { Role } from './users/table.ts';
import { ApiError, MALFORMED_KEY_HINT } from './lib/errors.ts';

/** A service's refusal (a bad email, a taken address) as the CLI's own error. */
async function asCliError<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ApiError) {
      const fields = error.fieldErrors
        ? Object.entries(error.fieldErrors)
            .map(([k, v]) => `${k}: ${v}`)
            .join('; ')
        : '';
      throw new CliError(fields ? `${error.message} (${fields})` : error.message);
    }
    throw error;
  }
}

/** The caller got the invocation wrong: exit code 2 and a pointer to the usage text. */
class UsageError extends Error {}

/** A parser's complaint about an option's value, as a usage error. */
function usage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}
/** An expected failure (unknown business or key): exit code 1 and the message, never a stack. */
class CliError extends Error {}

type Values = Record<string, string | boolean | undefined>;
type Options = NonNullable<ParseArgsConfig['options']>;

interface Command {
  usage: string;
  options: Options;
  required: string[];
  /** The one positional argument the command takes (backup's FILE), named for usage errors. */
  positional?: string;
  /** `applied` lists the migrations that ran just before this command. */
  /** Resolves to the exit code when it is not 0 (an import with failed lines). */
  run?(
    handle: DatabaseHandle & { writes: WriteRunner },
    values: Values,
    applied: string[],
    positionals: string[],
    // biome-ignore lint/suspicious/noConfusingVoidType: most commands return nothing; a number is an exit code
  ): Promise<void | number>;
  /**
   * A command that must see the database as it is, without opening or migrating it (a backup taken
   * before an upgrade): given DATABASE_URL and the positional argument.
   */
  alone?(databaseUrl: string, positionals: string[]): Promise<void>;
}

const json: Options = { json: { type: 'boolean' } };

const commands: Record<string, Command> = {
  'business create': {
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
          ? 'Well formed: an sl_live_ key whose checksum is right. Whether it is live, only the service can say.'
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
  'user create': {
    usage:
      'user create --business ID --email E --name N --role owner|admin|viewer [--json]   add a console user; prints its password once',
    options: {
      business: { type: 'string' },
      email: { type: 'string' },
      name: { type: 'string' },
      role: { type: 'string' },
      ...json,
    },
    required: ['business', 'email', 'name', 'role'],
    async run({ db, writes }, values) {
      const businessId = await requireBusiness(db, String(values.business));
      const input = { email: String(values.email), name: String(values.name), role: String(values.role) as Role };
      const { user, password } = await asCliError(() =>
        writes.run({ businessId, actor: CLI }, (ctx) => createUser(ctx, input)),
      );
      if (values.json) return printJson({ ...user, password });
      printLines(
        `Created ${user.role} ${user.email} (${user.id}) in business ${businessId}.`,
        'Their console password is shown only this once; hand it over safely:',
        `  ${password}`,
        'Sign in at /console/sign-in.',
      );
    },
  },
  'user list': {
    usage: "user list --business ID [--json]       list a business's console users",
    options: { business: { type: 'string' }, ...json },
    required: ['business'],
    async run({ db }, values) {
      const businessId = await requireBusiness(db, String(values.business));
      const users = await listUsers(db, businessId);
      if (values.json) return printJson(users);
      if (users.length === 0) return printLines(`Business ${businessId} has no console users.`);
      printTable(
        ['ID', 'EMAIL', 'NAME', 'ROLE', 'STATUS'],
        users.map((u) => [u.id, u.email, u.name, u.role, u.status]),
      );
    },
  },
  'user disable': {
    usage: 'user disable --business ID --user-id ID   disable a console user and end their sessions',
    options: { business: { type: 'string' }, 'user-id': { type: 'string' } },
    required: ['business', 'user-id'],
    async run({ db, writes }, values) {
      const businessId = await requireBusiness(db, String(values.business));
      const id = String(values['user-id']);
      await asCliError(() =>
        writes.run({ businessId, actor: CLI }, (ctx) => updateUser(ctx, id, { status: 'disabled' })),
      );
      printLines(`Disabled user ${id}; their sessions have ended.`);
    },
  },
  'projections rebuild': {
    usage:
      'projections rebuild --business ID      rebuild the derived order tables (counts, property index) of a business',
    options: { business: { type: 'string' } },
    required: ['business'],
    async run({ db, writes }, values) {
      const businessId = await requireBusiness(db, String(values.business));
      const started = performance.now();
      await writes.run({ businessId, actor: CLI }, (ctx) =>
        rebuildOrderProjections(ctx.trx, businessId, (done) => {
          if (done % 50_000 === 0) process.stderr.write(`${done.toLocaleString('en')} live orders indexed\n`);
        }),
      );
      printLines(
        `Rebuilt the order projections of ${businessId} in ${((performance.now() - started) / 1000).toFixed(1)} s.`,
      );
    },
  },
  'events tail': {
    usage:
      "events tail --business ID [--after N] [--once] [--json]  print the business's events and follow new ones (Ctrl-C stops)",
    options: { business: { type: 'string' }, after: { type: 'string' }, once: { type: 'boolean' }, ...json },
    required: ['business'],
    async run({ db }, values) {
      const businessId = await requireBusiness(db, String(values.business));
      const text = String(values.after ?? '0');
      if (!/^\d{1,15}$/.test(text)) throw new UsageError('--after must be a whole number');
      let after = Number(text);
      let stop = false;
      process.once('SIGINT', () => {
        stop = true;
      });
      process.once('SIGTERM', () => {
        stop = true;
      });
      while (!stop) {
        const page = await listEvents(db, businessId, { after, limit: 500 });
        for (const e of page.items) {
          process.stdout.write(
            values.json
              ? `${JSON.stringify(e)}\n`
              : `${e.sequence}\t${e.occurredAt}\t${e.type}\t${e.resourceId}\t${e.actor.type}:${e.actor.id}\n`,
          );
        }
        after = page.lastSequence;
        if (page.hasMore) continue;
        if (values.once) break;
        // A second between looks: the CLI is its own process, without the server's notifications.
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    },
  },
  demo: {
    usage:
      'demo [--orders N] [--items M] [--buyers K] [--json]  create a business full of demo data (default 300 orders, 40 items, 20 buyers)',
    options: DEMO_OPTIONS,
    required: [],
    run: ({ db }, values) => runDemoCommand(db, values, (message) => new UsageError(message)),
  },
  import: {
    usage:
      'import FILE --business ID [--dry-run] [--stop-on-error]   apply an NDJSON import file (README, "Bulk import"), with progress',
    options: { business: { type: 'string' }, 'dry-run': { type: 'boolean' }, 'stop-on-error': { type: 'boolean' } },
    required: ['business'],
    positional: 'FILE',
    async run({ db, writes }, values, _applied, [file]) {
      const businessId = await requireBusiness(db, String(values.business));
      const { imports } = loadConfig(process.env);
      const ok = await asCliError(() =>
        runImportCommand(
          db,
          writes,
          {
            businessId,
            file,
            dryRun: values['dry-run'] === true,
            stopOnError: values['stop-on-error'] === true,
            maxBytes: imports.maxBytes,
            leaseMs: imports.leaseMs,
          },
          printLines,
        ),
      );
      return ok ? 0 : 1;
    },
  },
  backup: {
    usage:
      'backup FILE                            an online backup of a SQLite database to FILE (PostgreSQL: pg_dump, docs/operations.md)',
    options: {},
    required: [],
    positional: 'FILE',
    async alone(describe, [file]) {
      if (!describe.startsWith('sqlite:')) {
        throw new CliError(
          'backup copies SQLite databases; for PostgreSQL use pg_dump --format=custom (docs/operations.md, "Backups")',
        );
      }
      const started = Date.now();
      let shown = -1;
      const progress = (copied: number, total: number) => {
        const percent = Math.floor((copied / Math.max(1, total)) * 100);
        if (percent < shown + 10 && copied < total) return;
        shown = percent;
        process.stderr.write(`${percent}%  ${copied.toLocaleString('en')}/${total.toLocaleString('en')} pages\n`);
      };
      const { pages } = await backupSqlite(describe.slice('sqlite:'.length), file, progress);
      // A small database is copied in one step, which reports nothing.
      if (shown < 100) progress(pages, pages);
      printLines(
        `Backed up ${describe} to ${file} (${pages.toLocaleString('en')} pages, ${((Date.now() - started) / 1000).toFixed(1)} s).`,
        `Restore: stop the servers, copy ${file} over the database file (and remove its -wal and -shm files), start them.`,
      );
    },
  },
  migrate: {
    usage: 'migrate                                apply pending database migrations',
    options: {},
    required: [],
    async run({ describe }, _values, applied) {
      if (applied.length === 0) return printLines(`Database is up to date (${describe}).`);
      printLines(`Applied ${applied.length} migration(s) to ${describe}:`, ...applied.map((name) => `  ${name}`));
    },
  },
};

function formatUsage(): string {
  return [
    'Usage: supplyline <command> [options]   (or: npm run cli -- <command> [options])',
    '',
    'Commands:',
    ...Object.values(commands).map((c) => `  ${c.usage}`),
    '  help                                   show this text',
    '',
    'The database comes from DATABASE_URL (sqlite:PATH or postgres://...; default sqlite:./data/supplyline.db).',
    'Pending migrations are applied before every command but backup.',
  ].join('\n');
}

async function requireBusiness(db: Db, businessId: string): Promise<string> {
  if (!(await findBusiness(db, businessId))) throw new CliError(`Business ${businessId} not found`);
  return businessId;
}

function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

function printLines(...lines: string[]): void {
  process.stdout.write(`${lines.join('\n')}\n`);
}

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const format = (row: string[]) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  printLines(format(header), ...rows.map(format));
}

/** Splits argv into a command and its validated options; throws UsageError for anything off. */
function parseCommand(argv: string[]): { command: Command; values: Values; positionals: string[] } | 'help' {
  if (argv.length === 0 || ['help', '--help', '-h'].includes(argv[0])) return 'help';
  const words = ['migrate', 'demo', 'backup', 'import'].includes(argv[0]) ? 1 : 2;
  const name = argv.slice(0, words).join(' ');
  const command = commands[name];
  if (!command) throw new UsageError(`Unknown command '${name}'`);
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv.slice(words),
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: command.positional !== undefined,
    }));
  } catch (error) {
    // parseArgs reports bad flags as TypeErrors with ERR_PARSE_ARGS_* codes; anything else is a bug.
    if (String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS'))
      throw new UsageError((error as Error).message);
    throw error;
  }
  if (values.help) return 'help';
  const missing = command.required.filter((option) => values[option] === undefined);
  if (missing.length > 0) throw new UsageError(`'${name}' needs ${missing.map((o) => `--${o}`).join(' and ')}`);
  if (command.positional !== undefined && positionals.length !== 1)
    throw new UsageError(`'${name}' needs one ${command.positional}`);
  return { command, values, positionals };
}

/** Returns the exit code: 0 on success, 1 for failures, 2 for usage errors. */
async function runCli(argv: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  let handle: DatabaseHandle | undefined;
  try {
    const parsed = parseCommand(argv);
    if (parsed === 'help') {
      printLines(formatUsage());
      return 0;
    }
    // The same two steps as runtime.ts's openDatabase, without importing the HTTP stack it sits
    // next to (a large part of each invocation's start-up), and keeping the list of what ran.
    const { databaseUrl, pgPreparedStatements, migrationLockWaitMs } = loadConfig(env);
    if (parsed.command.alone) {
      await parsed.command.alone(databaseUrl, parsed.positionals);
      return 0;
    }
    handle = createDatabase(databaseUrl, { prepare: pgPreparedStatements });
    const applied = await migrateToLatest(handle.db, handle.dialect, undefined, { waitMs: migrationLockWaitMs });
    const code = await parsed.command.run!(
      { ...handle, writes: createWriteRunner(handle.db) },
      parsed.values,
      applied,
      parsed.positionals,
    );
    return code ?? 0;
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`Error: ${error.message}\nRun 'supplyline help' for usage.\n`);
      return 2;
    }
    const prefix = error instanceof ConfigError ? 'Configuration error' : 'Error';
    // Unexpected errors (an unreachable database, say) are reported the same way: operators need
    // the message, and a stack trace would only bury it.
    const message = error instanceof Error ? error.message || error.name : String(error);
    process.stderr.write(
      `${prefix}: ${message}${error instanceof CliError || error instanceof ConfigError ? '' : formatCause(error)}\n`,
    );
    return 1;
  } finally {
    await handle?.close().catch(() => {});
  }
}

function formatCause(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? ` (${code})` : '';
}

// exitCode rather than process.exit(), so output piped to another program is flushed first.
process.exitCode = await runCli(process.argv.slice(2));
