import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { openSqliteDatabase } from './sqlite-driver.ts';

/**
 * An online backup of a SQLite database to `file` with SQLite's backup API: one consistent moment,
 * WAL included, while servers keep writing. Refuses to overwrite a file.
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
        // Pages per step: each step holds the read lock only briefly.
        return 1000;
      },
    });
    return { pages: totalPages };
  } finally {
    source.close();
  }
}
