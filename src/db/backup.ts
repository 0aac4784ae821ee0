import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { openSqliteDatabase } from './sqlite-driver.ts';

/**
 * An online backup of a SQLite database to `file`, with SQLite's backup API: the servers keep
 * reading and writing meanwhile, and the copy is one consistent moment of the database, WAL
 * included. `onProgress` hears how many pages are copied of how many. Refuses to overwrite a file.
 */
export async function backupSqlite(
  databasePath: string,
  file: string,
  onProgress: (copied: number, total: number) => void = () => {},
): Promise<{ pages: number }> {
  if (resolve(databasePath) === resolve(file)) throw new Error('The backup must go to another file than the database');
  if (existsSync(file)) throw new Error(`${file} exists: choose a new file, so that no backup is overwritten`);
  if (!existsSync(databasePath)) throw new Error(`${databasePath} does not exist`);
  const source = openSqliteDatabase(databasePath, { readonly: true });
  try {
    const { totalPages } = await source.backup(file, {
      progress: ({ totalPages: total, remainingPages }) => {
        onProgress(total - remainingPages, total);
        // Pages per step: a step holds the database's read lock only briefly, so writers go on.
        return 1000;
      },
    });
    return { pages: totalPages };
  } finally {
    source.close();
  }
}
