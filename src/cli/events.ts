/** A business's events, followed from the command line. */
import { listEvents } from '../events/repository.ts';
import { json, requireBusiness, UsageError, type Command } from './command.ts';

export const eventCommands: Record<string, Command> = {
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
};
