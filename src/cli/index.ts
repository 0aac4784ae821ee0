/** The CLI: its commands by noun, their parsing, and how a run ends (exit codes 0, 1 and 2). */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';
import { createDatabase, type DatabaseHandle } from '../db/connection.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { createWriteRunner } from '../write/runner.ts';
import { businessCommands } from './businesses.ts';
import { CliError, printLines, requireSqliteFile, UsageError, type Command, type Values } from './command.ts';
import { dataCommands } from './data.ts';
import { databaseCommands } from './database.ts';
import { eventCommands } from './events.ts';
import { sandboxCommands } from './sandbox.ts';
import { userCommands } from './users.ts';

const commands: Record<string, Command> = {
  ...businessCommands,
  ...userCommands,
  ...eventCommands,
  ...dataCommands,
  ...databaseCommands,
  ...sandboxCommands,
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
    'Pending migrations are applied before every command but backup, key check and help.',
  ].join('\n');
}

/** Splits argv into a command and its validated options; throws UsageError for anything off. */
type Parsed = { command: Command; values: Values; positionals: string[] } | 'help' | { noun: string; usages: string[] };

function parseCommand(argv: string[]): Parsed {
  if (argv.length === 0 || ['help', '--help', '-h'].includes(argv[0])) return 'help';
  const words = ['migrate', 'demo', 'backup', 'import'].includes(argv[0]) ? 1 : 2;
  const name = argv.slice(0, words).join(' ');
  const command = commands[name];
  if (!command) {
    // A noun alone, or with --help: its commands, rather than "unknown".
    const group = Object.entries(commands).filter(([n]) => n.startsWith(`${argv[0]} `));
    if (group.length > 0 && (argv.length === 1 || ['help', '--help', '-h'].includes(argv[1] ?? '')))
      return { noun: argv[0], usages: group.map(([, c]) => `  ${c.usage}`) };
    throw new UsageError(`Unknown command '${name}'`);
  }
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
  command.check?.(values);
  return { command, values, positionals };
}

export async function runCli(argv: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  let handle: DatabaseHandle | undefined;
  try {
    const parsed = parseCommand(argv);
    if (parsed === 'help') {
      printLines(formatUsage());
      return 0;
    }
    if ('noun' in parsed) {
      // `key --help` asked for them; `key` alone is missing its command.
      if (argv.length > 1) {
        printLines(`Commands of '${parsed.noun}':`, ...parsed.usages);
        return 0;
      }
      process.stderr.write(`Error: '${parsed.noun}' needs a command:\n${parsed.usages.join('\n')}\n`);
      return 2;
    }
    // runtime.ts's openDatabase without importing the HTTP stack beside it, and keeping the list of what ran.
    const { databaseUrl, pgPreparedStatements, migrationLockWaitMs } = loadConfig(env);
    if (!parsed.command.creates && !parsed.command.alone) requireSqliteFile(databaseUrl);
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
    // Unexpected errors too (an unreachable database): operators need the message, not a stack trace.
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
