import { type Kysely, sql, type Transaction } from 'kysely';
import { sendWrite, sentWritesDone, sentWritesOutcome } from '../db/pipeline.ts';
import type { Database } from '../db/types.ts';

/** At most this many writes share one transaction, which bounds the first one's wait (as SQLite's, decision 0035). */
const MAX_GROUP = 16;

/** A member's work, told whether it joined a group's transaction (the write lock is then held already). */
export type GroupWork<T> = (trx: Transaction<Database>, joined: boolean) => Promise<T>;

interface Waiting {
  run: GroupWork<unknown>;
  /** A long write (an import's batch): it begins a group, and never joins one (`join`). */
  long: boolean;
  /** What the caller knows the write by: `beforeCommit` is given those of the members kept. */
  tag: unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Group commit of one business's writes on PostgreSQL (decision 0053): while a write of a business
 * runs, the business's next writes on this instance wait here rather than on its write lock in the
 * database, and join the running write's transaction, each in a savepoint of its own, up to 16; one
 * COMMIT ends them. What SQLite's driver does for all writes (src/db/sqlite-dialect.ts), for the
 * same reasons: the lock is taken and handed over once, and the commit's flush is shared. The rules:
 * - nothing is answered before it is durable: every member is answered after the group's COMMIT;
 * - a failed member rolls back only its savepoint, and is answered after the group commits (its
 *   failure may rest on what it read of earlier members). The first member runs without one (a
 *   write alone costs what it did): when it fails, the transaction is rolled back, and the writes
 *   that waited begin a transaction of their own;
 * - a member's writes sent ahead (the first member's too) are checked once the next member's
 *   statements are answered, not before it starts; if they failed, that member is undone and the
 *   next one runs again (after the first member, in the next group);
 * - if the COMMIT fails, or a savepoint cannot be rolled back, every member fails and none is kept;
 * - a long write (an import's batch) begins a group and joins none (decision 0075);
 * - the business's next group begins while this one's COMMIT is on its way; its write lock waits in
 *   the database, and is granted when that COMMIT ends;
 * - `beforeCommit` runs last in every group's transaction, told the members kept (in order) and
 *   whether more than one ran: the runner writes there what they collected (src/write/at-commit.ts:
 *   their events, the read model's counts), one statement each. If it fails, every member fails.
 */
export class WriteGroups {
  readonly #db: Kysely<Database>;
  /** Per business, the writes waiting for it (present while a group of the business runs). */
  readonly #queues = new Map<string, Waiting[]>();

  /** Runs last in each group's transaction, before its COMMIT: the tags of the members kept, in order, and whether more than one ran. */
  readonly #beforeCommit: BeforeCommit;

  constructor(db: Kysely<Database>, beforeCommit: BeforeCommit) {
    this.#db = db;
    this.#beforeCommit = beforeCommit;
  }

  /**
   * Runs `run` in a transaction of the business's writes; resolves once that has committed. A `long`
   * write begins a group of its own: joined to a short write's, it would hold that write's answer for
   * as long as it runs. The writes that wait for it join it.
   */
  join<T>(businessId: string, run: GroupWork<T>, tag?: unknown, long = false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const waiting: Waiting = { run, long, tag, resolve: resolve as (value: unknown) => void, reject };
      const queue = this.#queues.get(businessId);
      if (queue) {
        queue.push(waiting);
        return;
      }
      this.#queues.set(businessId, [waiting]);
      void this.#drain(businessId);
    });
  }

  /**
   * The business's groups, one after another: the next one begins once the one before has run its
   * members, while that one's COMMIT is on its way. Its BEGIN and write lock then wait in the
   * database for that COMMIT, and are granted the moment it ends.
   */
  async #drain(businessId: string): Promise<void> {
    const queue = this.#queues.get(businessId)!;
    while (queue.length > 0) await new Promise<void>((ranAll) => void this.#group(businessId, queue, ranAll));
    this.#queues.delete(businessId);
  }

  /** `ranAll` is called once the group takes no more members: before its COMMIT, or when it fails. */
  async #group(businessId: string, queue: Waiting[], ranAll: () => void): Promise<void> {
    /** The members that ran, with their answers once the group has committed. */
    const ran: Ran[] = [];
    let began = false;
    // Kept here: a failed ROLLBACK replaces the error the transaction's work threw.
    let firstFailed: FirstWriteFailed | undefined;
    try {
      await this.#db.transaction().execute(async (trx) => {
        began = true;
        try {
          const member = queue.shift()!;
          const value = await member.run(trx, false).catch((error) => {
            throw new FirstWriteFailed(member, error);
          });
          // Its writes sent ahead are checked by the COMMIT, or once the next member's statements are answered.
          ran.push({ member, answer: () => member.resolve(value) });
          for (let n = 1; n < MAX_GROUP && queue.length > 0 && !queue[0].long; n++)
            await this.#joinSavepoint(trx, n, queue, ran);
        } catch (error) {
          if (error instanceof FirstWriteFailed) firstFailed = error;
          throw error;
        }
        if (ran.length > 1) await this.#lastSentWrites(trx, ran.at(-1)!);
        await this.#beforeCommit(
          trx,
          businessId,
          ran.filter((r) => !r.undone).map((r) => r.member.tag),
          ran.length > 1,
        );
        ranAll();
      });
    } catch (error) {
      ranAll();
      if (firstFailed) firstFailed.member.reject(firstFailed.reason);
      // No transaction (the database cannot be reached): the write at the head fails, and the next tries again.
      else if (!began) queue.shift()!.reject(error);
      else {
        for (const { member } of ran) member.reject(error);
      }
      return;
    }
    for (const { answer } of ran) answer();
  }

  /**
   * Runs a member in savepoint `member_n`. What the member before sent ahead is not waited for
   * before this one starts: it is checked once this one's statements have been answered. If it
   * failed, the transaction was aborted before this savepoint was made, so the member before is
   * undone (back to its own savepoint) and fails with that error, and this one runs again. The
   * group's first member has no savepoint: then the transaction is undone, and this one goes back to
   * the head of the queue, for the next group.
   */
  async #joinSavepoint(trx: Transaction<Database>, n: number, queue: Waiting[], ran: Ran[]): Promise<void> {
    const member = queue.shift()!;
    // Counted as run from here: if its savepoint cannot begin or be undone, it fails with the group.
    const entry: Ran = { member, answer: () => {}, savepoint: n };
    ran.push(entry);
    const before = await sentWritesOutcome(trx);
    const savepoint = sql.id(`member_${n}`);
    // Savepoints are not released; each travels with its member's first statement.
    await sendWrite(trx, sql`savepoint ${savepoint}`);
    let result: { value: unknown } | { error: unknown };
    try {
      result = { value: await member.run(trx, true) };
    } catch (error) {
      result = { error };
    }
    const earlier = await before.outcome;
    if (earlier) {
      ran.pop();
      const previous = ran.at(-1)!;
      // Back in the queue first: if the group fails here, this member goes on in the next.
      queue.unshift(member);
      if (previous.savepoint === undefined) throw new FirstWriteFailed(previous.member, earlier.error);
      await this.#undo(trx, previous, earlier.error);
      return this.#joinSavepoint(trx, n, queue, ran);
    }
    if ('error' in result) await this.#undo(trx, entry, result.error);
    else entry.answer = () => member.resolve(result.value);
  }

  /** The last member's writes sent ahead, checked before the COMMIT so that a failure undoes that member alone. */
  async #lastSentWrites(trx: Transaction<Database>, last: Ran): Promise<void> {
    try {
      await sentWritesDone(trx);
    } catch (error) {
      await this.#undo(trx, last, error);
    }
  }

  /** Rolls a joined member back to its savepoint; it fails with `error` once the group has committed. */
  async #undo(trx: Transaction<Database>, ran: Ran, error: unknown): Promise<void> {
    // What it sent ahead is undone with it; a failure among them is the reason it failed, or moot.
    await sentWritesDone(trx).catch(() => {});
    await sql`rollback to savepoint ${sql.id(`member_${ran.savepoint}`)}`.execute(trx);
    ran.undone = true;
    ran.answer = () => ran.member.reject(error);
  }
}

type BeforeCommit = (trx: Transaction<Database>, businessId: string, kept: unknown[], joined: boolean) => Promise<void>;

interface Ran {
  member: Waiting;
  answer: () => void;
  /** Rolled back to its savepoint: it fails once the group has committed. */
  undone?: boolean;
  /** The number of its savepoint; none for the group's first member. */
  savepoint?: number;
}

/** The group's first member failed: the transaction is undone, and the members that waited go on in the next. */
class FirstWriteFailed extends Error {
  readonly member: Waiting;
  readonly reason: unknown;

  constructor(member: Waiting, reason: unknown) {
    super('The first write of a group failed');
    this.member = member;
    this.reason = reason;
  }
}
