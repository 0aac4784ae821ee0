import { createdEvent, namedEvent, updatedEvent } from '../log/events.ts';
import { conflict, notFound, validationError } from '../lib/errors.ts';
import { newId } from '../lib/ids.ts';
import type { WriteContext } from '../write/runner.ts';
import { generatePassword, hashPassword } from './password.ts';
import { findUser, findUserByEmail, toUser } from './repository.ts';
import type { Role } from './table.ts';

export const ROLES: Role[] = ['owner', 'admin', 'viewer'];
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

export interface NewUser {
  email: string;
  name: string;
  role: Role;
  /** Made up and returned when left out. */
  password?: string;
}

/** The password (given or generated) is returned once and stored only as its scrypt hash. */
export async function createUser(ctx: WriteContext, input: NewUser) {
  const email = input.email.trim().toLowerCase();
  const name = input.name.trim();
  if (!EMAIL.test(email)) throw validationError({ email: 'Must be an email address' });
  if (name.length === 0 || name.length > 200) throw validationError({ name: 'Must be 1 to 200 characters' });
  if (!ROLES.includes(input.role)) throw validationError({ role: `Must be one of ${ROLES.join(', ')}` });
  if (input.password !== undefined && (input.password.length < 12 || input.password.length > 200)) {
    throw validationError({ password: 'Must be 12 to 200 characters' });
  }
  if (await findUserByEmail(ctx.trx, email)) throw conflict('A user with this email already exists');
  const password = input.password ?? generatePassword();
  const id = newId('usr');
  await ctx.trx
    .insertInto('users')
    .values({
      id,
      business_id: ctx.businessId,
      email,
      name,
      role: input.role,
      password_hash: await hashPassword(password),
      status: 'active',
      created_at: ctx.now,
      updated_at: ctx.now,
    })
    .execute();
  const user = toUser((await findUser(ctx.trx, ctx.businessId, id))!);
  ctx.emit(createdEvent('user', user));
  return { user, password };
}

/** Changes a user's role or status; disabling also ends every session of theirs. */
export async function updateUser(
  ctx: WriteContext,
  id: string,
  change: { role?: Role; status?: 'active' | 'disabled' },
) {
  const row = await findUser(ctx.trx, ctx.businessId, id);
  if (!row) throw notFound('User not found');
  if (change.role !== undefined && !ROLES.includes(change.role))
    throw validationError({ role: `Must be one of ${ROLES.join(', ')}` });
  const before = toUser(row);
  await ctx.trx
    .updateTable('users')
    .set({ ...change, updated_at: ctx.now })
    .where('id', '=', id)
    .execute();
  if (change.status === 'disabled') {
    await ctx.trx
      .updateTable('sessions')
      .set({ revoked_at: ctx.now })
      .where('user_id', '=', id)
      .where('revoked_at', 'is', null)
      .execute();
  }
  const after = toUser((await findUser(ctx.trx, ctx.businessId, id))!);
  ctx.emit(updatedEvent('user', before, after));
  return after;
}

/**
 * Sets a password (stored as its scrypt hash) and ends the user's sessions, all or all but
 * `keepSession` (the user changing their own). The event names the user, never a password or hash.
 */
export async function setPassword(ctx: WriteContext, id: string, password: string, keepSession?: string) {
  const row = await findUser(ctx.trx, ctx.businessId, id);
  if (!row) throw notFound('User not found');
  if (password.length < 12 || password.length > 200)
    throw validationError({ password: 'Must be 12 to 200 characters' });
  await ctx.trx
    .updateTable('users')
    .set({ password_hash: await hashPassword(password), updated_at: ctx.now })
    .where('id', '=', id)
    .execute();
  await ctx.trx
    .updateTable('sessions')
    .set({ revoked_at: ctx.now })
    .where('user_id', '=', id)
    .where('revoked_at', 'is', null)
    .$if(keepSession !== undefined, (q) => q.where('id_hash', '!=', keepSession!))
    .execute();
  const own = ctx.actor.type === 'user' && ctx.actor.id === id;
  ctx.emit(
    namedEvent(
      'user',
      own ? 'password_changed' : 'password_reset',
      toUser((await findUser(ctx.trx, ctx.businessId, id))!),
    ),
  );
}
