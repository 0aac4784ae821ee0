/** Console users, from the command line. */
import { createUser, ROLES, updateUser } from '../users/service.ts';
import { listUsers } from '../users/repository.ts';
import type { Role } from '../users/table.ts';
import { CLI } from '../write/runner.ts';
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

export const userCommands: Record<string, Command> = {
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
    check(values) {
      if (!ROLES.includes(String(values.role) as Role))
        throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
    },
    async run({ db, writes }, values) {
      const role = String(values.role) as Role;
      const businessId = await requireBusiness(db, String(values.business));
      const input = { email: String(values.email), name: String(values.name), role };
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
};
