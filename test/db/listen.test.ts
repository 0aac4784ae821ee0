import assert from 'node:assert/strict';
import { setTimeout as wait } from 'node:timers/promises';
import { describe, it } from 'node:test';
import pg from 'pg';
import { listen } from '../../src/db/listen.ts';

const until = async (check: () => boolean, ms = 5000) => {
  for (const end = Date.now() + ms; !check() && Date.now() < end; ) await wait(20);
  assert.ok(check(), 'timed out');
};

describe('the listener', () => {
  it('says when it cannot connect, once, without the password, and keeps trying', async () => {
    const problems: string[] = [];
    const listener = listen(
      'postgres://admin:TopSecret99@127.0.0.1:1/nowhere',
      'supplyline_test_listen',
      () => {},
      () => {},
      (message) => problems.push(message),
    );
    try {
      await until(() => problems.length > 0);
      // It tried again after a second, and said nothing more: once a minute at most.
      await wait(1300);
      assert.equal(problems.length, 1, JSON.stringify(problems));
      assert.match(
        problems[0],
        /^The listener cannot connect to PostgreSQL \(ECONNREFUSED\): other instances' commits/,
      );
      assert.doesNotMatch(problems[0], /TopSecret99/);
    } finally {
      await listener.close();
    }
  });

  const url = process.env.TEST_DATABASE_URL;
  it('says when its connection is lost and when it listens again', {
    skip: url ? false : 'needs TEST_DATABASE_URL',
  }, async () => {
    const problems: string[] = [];
    let reconnected = 0;
    const channel = `supplyline_test_listen_${process.pid}`;
    const listener = listen(
      url!,
      channel,
      () => {},
      () => reconnected++,
      (message) => problems.push(message),
    );
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const listening = async () =>
        (await admin.query('select pid from pg_stat_activity where query = $1', [`listen ${channel}`])).rows;
      for (let i = 0; i < 100 && (await listening()).length === 0; i++) await wait(50);
      for (const { pid } of await listening()) await admin.query('select pg_terminate_backend($1)', [pid]);
      await until(() => reconnected === 1);
      assert.deepEqual(
        problems.map((p) => p.split(' (')[0]),
        ['The listener lost its connection to PostgreSQL', 'The listener listens again'],
      );
    } finally {
      await admin.end();
      await listener.close();
    }
  });
});
