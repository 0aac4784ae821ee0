/** Sandboxes of a live business (src/sandbox), from the command line. */
import { loadConfig } from '../config.ts';
import { tableProgress } from '../demo/progress.ts';
import type { CopyProgress } from '../sandbox/copy.ts';
import { resolveSecretBox } from '../runtime.ts';
import { listSandboxes } from '../sandbox/repository.ts';
import { isOrdersPerMinute, ORDERS_PER_MINUTE_RULE, runSimulation } from '../sandbox/simulator.ts';
import { createSandbox, deleteSandbox, resetSandbox, type SandboxSettings } from '../sandbox/service.ts';
import { CLI, type WriteRunner } from '../write/runner.ts';
import {
  asCliError,
  json,
  printJson,
  printLines,
  printTable,
  requireBusiness,
  UsageError,
  type Command,
} from './command.ts';

function settings(writes: WriteRunner, progress?: CopyProgress): SandboxSettings {
  const config = loadConfig(process.env);
  return {
    writes,
    actor: CLI,
    box: resolveSecretBox(config).box,
    maxSandboxes: config.sandboxesPerBusiness,
    progress,
  };
}

const copiedLine = (copied: Record<string, number>) =>
  `Copied ${
    Object.entries(copied)
      .filter(([, n]) => n > 0)
      .map(([table, n]) => `${n.toLocaleString('en')} ${table}`)
      .join(', ') || 'nothing (the live business has no configuration yet)'
  }.`;

export const sandboxCommands: Record<string, Command> = {
  'sandbox create': {
    usage:
      'sandbox create --from BUSINESS [--name NAME] [--json]   a sandbox of a live business: a copy of its configuration and a test key',
    options: { from: { type: 'string' }, name: { type: 'string' }, ...json },
    required: ['from'],
    async run({ db, writes }, values) {
      const name = values.name === undefined ? undefined : String(values.name).trim();
      if (name === '') throw new UsageError('--name must not be empty');
      const liveId = await requireBusiness(db, String(values.from));
      const progress = values.json ? undefined : tableProgress();
      // Interrupted during its copy, the sandbox stays, closed to writes: say what to do with it.
      let made: string | undefined;
      const interrupted = () => {
        if (made)
          process.stderr.write(
            `\nInterrupted: sandbox ${made} was not fully copied and takes no writes. ` +
              `Run 'sandbox reset --business ${made}' to copy again (then 'key create --business ${made}' for a key: ` +
              `its first was not shown), or 'sandbox delete --business ${made}'.\n`,
          );
        process.exit(130);
      };
      process.once('SIGINT', interrupted);
      process.once('SIGTERM', interrupted);
      const created = await asCliError(() =>
        createSandbox(db, liveId, name, {
          ...settings(writes, progress),
          onMade: (id) => {
            made = id;
          },
        }),
      ).finally(() => {
        process.off('SIGINT', interrupted);
        process.off('SIGTERM', interrupted);
      });
      progress?.finish();
      if (values.json)
        return printJson({
          sandboxId: created.sandbox.id,
          name: created.sandbox.name,
          apiKey: created.apiKey,
          copied: created.copied,
        });
      printLines(
        `Created sandbox ${created.sandbox.id} (${created.sandbox.name}) of business ${liveId}.`,
        copiedLine(created.copied),
        'Webhook endpoints are copied disabled: enable them in the sandbox. Its test key is shown only this once; store it now:',
        `  X-Business-Id: ${created.sandbox.id}`,
        `  X-API-Key:     ${created.apiKey}`,
      );
    },
  },
  'sandbox reset': {
    usage:
      'sandbox reset --business SANDBOX       empty a sandbox (its keys and users stay) and copy the live configuration again',
    options: { business: { type: 'string' } },
    required: ['business'],
    async run({ db, writes }, values) {
      const progress = tableProgress();
      const reset = await asCliError(() => resetSandbox(db, String(values.business), settings(writes, progress)));
      progress.finish();
      printLines(`Reset sandbox ${reset.sandbox.id} (${reset.sandbox.name}).`, copiedLine(reset.copied));
    },
  },
  'sandbox delete': {
    usage: 'sandbox delete --business SANDBOX      remove a sandbox and everything in it',
    options: { business: { type: 'string' } },
    required: ['business'],
    async run({ db, writes }, values) {
      const deleted = await asCliError(() => deleteSandbox(db, String(values.business), settings(writes)));
      const rows = Object.values(deleted.removed).reduce((a, b) => a + b, 0);
      printLines(
        `Deleted sandbox ${deleted.sandbox.id} (${deleted.sandbox.name}) and its ${rows.toLocaleString('en')} rows.`,
      );
    },
  },
  'sandbox list': {
    usage: "sandbox list --business BUSINESS [--json]   a live business's sandboxes",
    options: { business: { type: 'string' }, ...json },
    required: ['business'],
    async run({ db }, values) {
      const liveId = await requireBusiness(db, String(values.business));
      const sandboxes = await listSandboxes(db, liveId);
      if (values.json) return printJson(sandboxes);
      if (sandboxes.length === 0) return printLines(`Business ${liveId} has no sandboxes.`);
      printTable(
        ['ID', 'NAME', 'CREATED', 'STATE'],
        sandboxes.map((s) => [s.id, s.name, s.createdAt, s.closed ?? 'ready']),
      );
    },
  },
  'sandbox simulate': {
    usage:
      'sandbox simulate --business SANDBOX --orders-per-minute N [--minutes M]   a simulated buyer: orders at N a minute, ' +
      'some later changed or cancelled, for M minutes (default: until Ctrl-C)',
    options: { business: { type: 'string' }, 'orders-per-minute': { type: 'string' }, minutes: { type: 'string' } },
    required: ['business', 'orders-per-minute'],
    async run({ db, writes }, values) {
      const ordersPerMinute = Number(values['orders-per-minute']);
      if (!isOrdersPerMinute(ordersPerMinute))
        throw new UsageError(`--orders-per-minute: ${ORDERS_PER_MINUTE_RULE.replace(/^M/, 'm')}`);
      const minutes = values.minutes === undefined ? undefined : Number(values.minutes);
      if (minutes !== undefined && !(minutes > 0 && minutes <= 10_080))
        throw new UsageError('--minutes must be a number above 0, at most 10080 (a week)');
      const stop = new AbortController();
      const interrupted = () => stop.abort();
      process.once('SIGINT', interrupted);
      process.once('SIGTERM', interrupted);
      try {
        const counts = await asCliError(() =>
          runSimulation(db, String(values.business), {
            writes,
            ordersPerMinute,
            minutes,
            signal: stop.signal,
            onStart: (run) =>
              printLines(`Simulation ${run.id} started; the console shows it, and its findings, while it runs.`),
            onChange: ({ kind, order }) =>
              printLines(
                `${order.updatedAt}  ${kind.padEnd(9)} ${order.id}  ${order.internalReference}  ` +
                  `${order.orderItems.length} lines  ${order.totalAmount} ${order.currency}`,
              ),
          }),
        );
        printLines(
          `Simulated ${counts.created} orders; the buyer changed ${counts.changed}, ` +
            `cancelled ${counts.cancelled} and received ${counts.received} of them.`,
        );
      } finally {
        process.off('SIGINT', interrupted);
        process.off('SIGTERM', interrupted);
      }
    },
  },
};
