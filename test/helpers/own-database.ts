/**
 * Loaded with `--import` by the npm test scripts. Each test file runs in its own process, and each
 * such process gets a PostgreSQL database of its own, made from TEST_DATABASE_URL's and dropped
 * when the process ends. Test files then run in parallel without seeing each other's schemas:
 * Kysely's migrator lists the tables of every schema of its database, and fails with "schema ...
 * does not exist" when another process drops one at that moment.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

const base = process.env.TEST_DATABASE_URL;
// The test runner marks the processes it starts for test files; the runner itself needs no database.
if (base && process.env.NODE_TEST_CONTEXT) {
  const url = new URL(base);
  const name = `${url.pathname.slice(1) || 'postgres'}_f${process.pid}_${randomBytes(3).toString('hex')}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`create database "${name}"`);
  url.pathname = `/${name}`;
  process.env.TEST_DATABASE_URL = url.toString();
  let dropped = false;
  process.on('beforeExit', () => {
    if (dropped) return;
    dropped = true;
    admin(`drop database if exists "${name}" with (force)`).catch((error) => {
      console.error(`# could not drop the test database ${name}: ${(error as Error).message}`);
    });
  });
}
