import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';

const PRIMARY = 'postgres://postgres@127.0.0.1:5432/db';

/** The ConfigError a setting gives: it names the variable, and never shows a password. */
function refused(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    assert.doesNotMatch(error.message, /TopSecret99/);
    return error.message;
  }
  assert.fail(`accepted ${JSON.stringify(env)}`);
}

describe('database and Redis URLs in the configuration', () => {
  it('refuses a URL that does not parse, naming its variable', () => {
    const bad = 'postgres://admin:TopSecret99@db:notaport/x';
    assert.match(
      refused({ DATABASE_URL: bad }),
      /^DATABASE_URL must be sqlite:PATH or postgres:\/\/\.\.\., got 'postgres:\/\/admin:\*\*\*@db:notaport\/x'/,
    );
    assert.match(
      refused({ DATABASE_URL: PRIMARY, DATABASE_DIRECT_URL: bad }),
      /^DATABASE_DIRECT_URL must be a postgres:\/\/ URL/,
    );
    assert.match(
      refused({ DATABASE_URL: PRIMARY, LISTEN_DATABASE_URL: bad }),
      /^LISTEN_DATABASE_URL must be a postgres:\/\/ URL/,
    );
    assert.match(
      refused({ DATABASE_URL: PRIMARY, LISTEN_DATABASE_URL: 'postgres://admin:TopSecret99@db:99999/x' }),
      /^LISTEN_DATABASE_URL must be a postgres:\/\/ URL/,
    );
    assert.match(
      refused({ DATABASE_URL: PRIMARY, REDIS_URL: 'redis://:TopSecret99@127.0.0.1:notport/7' }),
      /^REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL, got 'redis:\/\/:\*\*\*@127\.0\.0\.1:notport\/7'/,
    );
  });

  it('refuses a listener or direct URL that is not PostgreSQL, naming its variable', () => {
    assert.match(
      refused({ DATABASE_URL: PRIMARY, LISTEN_DATABASE_URL: 'mysql://u:TopSecret99@h/x' }),
      /^LISTEN_DATABASE_URL/,
    );
    assert.match(refused({ DATABASE_URL: PRIMARY, LISTEN_DATABASE_URL: 'sqlite:./x.db' }), /^LISTEN_DATABASE_URL/);
    assert.match(refused({ DATABASE_URL: PRIMARY, DATABASE_DIRECT_URL: 'sqlite:./x.db' }), /^DATABASE_DIRECT_URL/);
  });

  it('takes the URLs operators write', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgresql:///db?host=/var/run/postgresql',
      DATABASE_DIRECT_URL: 'postgres://u:p@db.internal:5432/db',
      LISTEN_DATABASE_URL: 'postgres://u:p@db.internal:5432/db?sslmode=require',
      REDIS_URL: 'rediss://:p@cache.internal:6380/2',
    });
    assert.equal(config.listenDatabaseUrl, 'postgres://u:p@db.internal:5432/db?sslmode=require');
    assert.equal(loadConfig({ DATABASE_URL: 'sqlite:./data/x.db' }).listenDatabaseUrl, 'sqlite:./data/x.db');
  });

  it('shows no part of a password in a URL it refuses, whatever the password holds', () => {
    // A comma cuts DATABASE_REPLICA_URLS in two: the first half, 'postgres://u:Top', has no '@' to mask up to.
    assert.match(
      refused({ DATABASE_URL: PRIMARY, DATABASE_REPLICA_URLS: 'postgres://u:Top,Secret99@h/db' }),
      /^DATABASE_REPLICA_URLS must be postgres:\/\/ URLs separated by commas \(write a comma in a password as %2C\): URL 1 of 2 does not parse/,
    );
    assert.doesNotMatch(
      refused({ DATABASE_URL: PRIMARY, DATABASE_REPLICA_URLS: 'postgres://u:Top,Secret99@h/db' }),
      /Top/,
    );
    // A '/', ':' or '@' in a password (not percent-encoded) is masked with the rest of it.
    for (const password of ['Top/Secret99', 'Top:Secret99', 'Top@Secret99'])
      assert.doesNotMatch(refused({ DATABASE_URL: `postgres://admin:${password}@db:notaport/x` }), /Top|Secret/);
  });
});
