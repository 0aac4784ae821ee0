/** What every command of the CLI is made of: its shape, its two kinds of failure, and its output. */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ParseArgsConfig } from 'node:util';
import { findBusiness } from '../businesses/repository.ts';
import type { DatabaseHandle } from '../db/connection.ts';
import type { Db } from '../db/types.ts';
import { ApiError } from '../lib/errors.ts';
import type { WriteRunner } from '../write/runner.ts';

/** A service's refusal (a bad email, a taken address) as the CLI's own error. */
export async function asCliError<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ApiError) {
      const fields = error.fieldErrors
        ? Object.entries(error.fieldErrors)
            .map(([k, v]) => `${k}: ${v}`)
            .join('; ')
        : '';
      const message = fields ? `${error.message} (${fields})` : error.message;
      // A value the service refuses as such (a malformed email) is wrong usage, as a malformed flag is.
      throw error.code === 'VALIDATION_ERROR' ? new UsageError(message) : new CliError(message);
    }
    throw error;
  }
}

/** The caller got the invocation wrong: exit code 2 and a pointer to the usage text. */
export class UsageError extends Error {}

/**
 * A command that acts on what a SQLite database holds, where DATABASE_URL names no file: a mistyped
 * path would make an empty database there, and the command would answer "not found".
 */
export function requireSqliteFile(databaseUrl: string): void {
  if (!databaseUrl.startsWith('sqlite:')) return;
  const path = databaseUrl.slice('sqlite:'.length);
  if (path === ':memory:' || existsSync(path)) return;
  throw new CliError(
    `No database at ${resolve(path)} (DATABASE_URL): check the path; 'supplyline migrate' makes a new one there`,
  );
}

export function usage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}
/** An expected failure (unknown business or key): exit code 1 and the message, never a stack. */
export class CliError extends Error {}

export type Values = Record<string, string | boolean | undefined>;
export type Options = NonNullable<ParseArgsConfig['options']>;

export interface Command {
  usage: string;
  options: Options;
  required: string[];
  /** Refuses values that are wrong whatever the database holds (UsageError), before it is opened. */
  check?(values: Values): void;
  /** It may make the SQLite file DATABASE_URL names (migrate, demo, business create); the others need it there. */
  creates?: true;
  /** The one positional argument the command takes (backup's FILE), named for usage errors. */
  positional?: string;
  /** `applied`: the migrations that just ran. Resolves to the exit code when not 0 (an import with failed lines). */
  run?(
    handle: DatabaseHandle & { writes: WriteRunner },
    values: Values,
    applied: string[],
    positionals: string[],
    // biome-ignore lint/suspicious/noConfusingVoidType: most commands return nothing; a number is an exit code
  ): Promise<void | number>;
  /** Sees the database as it is, neither opened nor migrated (a backup taken before an upgrade). */
  alone?(databaseUrl: string, positionals: string[]): Promise<void>;
}

export const json: Options = { json: { type: 'boolean' } };

export async function requireBusiness(db: Db, businessId: string): Promise<string> {
  if (!(await findBusiness(db, businessId))) throw new CliError(`Business ${businessId} not found`);
  return businessId;
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

export function printLines(...lines: string[]): void {
  process.stdout.write(`${lines.join('\n')}\n`);
}

export function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const format = (row: string[]) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  printLines(format(header), ...rows.map(format));
}
