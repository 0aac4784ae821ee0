import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../db/types.ts';

export const SESSION_COOKIE = 'sl_session';
export const IDLE_MS = 12 * 3_600_000;
export const ABSOLUTE_MS = 7 * 86_400_000;
/** The idle expiry counts from last_seen_at, written at most this often. */
const TOUCH_MS = 60_000;

/** Stored as the SHA-256 of the cookie's secret. */
export const sessionIdOf = (token: string) => createHash('sha256').update(token).digest('hex');
const hashOf = sessionIdOf;

/** 32 random bytes in the cookie, only their hash stored. */
export async function createSession(db: Db, user: { id: string; business_id: string }, now: number): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  const at = new Date(now).toISOString();
  await db
    .insertInto('sessions')
    .values({
      id_hash: hashOf(token),
      user_id: user.id,
      business_id: user.business_id,
      created_at: at,
      last_seen_at: at,
      expires_at: new Date(now + ABSOLUTE_MS).toISOString(),
      revoked_at: null,
    })
    .execute();
  return token;
}

export interface SessionUser {
  id: string;
  /** The business the console shows: the user's own, or a sandbox of it switched to. */
  businessId: string;
  /** The user's own (live) business. */
  liveBusinessId: string;
  /** The sandbox's name while the session shows one; null on the live business. */
  sandboxName: string | null;
  email: string;
  name: string;
  role: 'owner' | 'admin' | 'viewer';
  token: string;
}

/** The user of a live session: not revoked, not past 7 days, used in the last 12 hours, user active. */
export async function readSession(db: Db, token: string | undefined, now: number): Promise<SessionUser | null> {
  if (!token || token.length > 100) return null;
  const row = await db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .leftJoin('businesses', 'businesses.id', 'sessions.business_id')
    .select([
      'sessions.id_hash',
      'sessions.business_id as shown_business_id',
      'businesses.live_business_id as shown_live_business_id',
      'businesses.name as shown_business_name',
      'sessions.last_seen_at',
      'sessions.expires_at',
      'sessions.revoked_at',
      'users.id',
      'users.business_id',
      'users.email',
      'users.name',
      'users.role',
      'users.status',
    ])
    .where('sessions.id_hash', '=', hashOf(token))
    .executeTakeFirst();
  if (!row || row.revoked_at !== null || row.status !== 'active') return null;
  const lastSeen = new Date(row.last_seen_at).getTime();
  if (new Date(row.expires_at).getTime() <= now || lastSeen + IDLE_MS <= now) return null;
  if (now - lastSeen > TOUCH_MS) {
    await db
      .updateTable('sessions')
      .set({ last_seen_at: new Date(now).toISOString() })
      .where('id_hash', '=', row.id_hash)
      .execute();
  }
  // A sandbox of the user's business only; anything else shows the user's own.
  const sandbox = row.shown_live_business_id !== null && row.shown_live_business_id === row.business_id;
  return {
    id: row.id,
    businessId: sandbox ? row.shown_business_id : row.business_id,
    liveBusinessId: row.business_id,
    sandboxName: sandbox ? row.shown_business_name : null,
    email: row.email,
    name: row.name,
    role: row.role,
    token,
  };
}

/** The console shows `businessId` (the user's business, or a sandbox of it, checked by the caller) from now on. */
export async function showBusiness(db: Db, token: string, businessId: string): Promise<void> {
  await db.updateTable('sessions').set({ business_id: businessId }).where('id_hash', '=', hashOf(token)).execute();
}

export async function endSession(db: Db, token: string, now: number): Promise<void> {
  await db
    .updateTable('sessions')
    .set({ revoked_at: new Date(now).toISOString() })
    .where('id_hash', '=', hashOf(token))
    .execute();
}

export async function endAllSessions(db: Db, userId: string, now: number): Promise<void> {
  await db
    .updateTable('sessions')
    .set({ revoked_at: new Date(now).toISOString() })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Derived from the session's secret: nothing more stored, useless without the cookie. */
export const csrfTokenOf = (token: string) =>
  createHmac('sha256', token).update('supplyline-console-csrf').digest('base64url');

export function checkCsrf(token: string, presented: unknown): boolean {
  if (typeof presented !== 'string') return false;
  const expected = Buffer.from(csrfTokenOf(token));
  const actual = Buffer.from(presented);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}
