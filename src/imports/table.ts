import type { ColumnType } from 'kysely';
import type { NullableTimestamp, Timestamp } from '../db/columns.ts';

/** A bulk import (src/imports): one row per whole file received. */
export interface ImportTable {
  id: string;
  business_id: string;
  created_at: Timestamp;
  /** The API key that sent the file: the actor of every write the import makes. */
  created_by: string;
  /** That key's scopes when it sent the file, as JSON (null: every scope). */
  scopes: string | null;
  idempotency_key: string | null;
  /** sha256 of the options and the file: the same Idempotency-Key with another file is refused. */
  fingerprint: string;
  /** `{"dryRun": boolean, "onError": "continue" | "stop"}` */
  options: string;
  /** QUEUED, RUNNING, COMPLETED, STOPPED */
  state: string;
  bytes: ColumnType<number | string, number, number>;
  total_lines: number;
  /** Lines applied so far, in order: line n is done exactly when lines_done >= n. */
  lines_done: number;
  /** Lines by outcome, as JSON: `{"created": 3, "updated": 1, "unchanged": 0, "failed": 2}`. */
  counts: string;
  started_at: NullableTimestamp;
  finished_at: NullableTimestamp;
  /** The instance working on it, until `lease_until`; another takes over once that has passed. */
  lease_owner: string | null;
  lease_until: NullableTimestamp;
}

/** The file: runs of whole lines (NDJSON, as sent), so any instance can resume the import. */
export interface ImportChunkTable {
  import_id: string;
  /** The number of the run's first line (1-based, blank lines counted). */
  first_line: number;
  line_count: number;
  created_at: Timestamp;
  data: ColumnType<Buffer | Uint8Array, Buffer, Buffer>;
}

/** One row per line done. */
export interface ImportResultTable {
  import_id: string;
  line: number;
  ref: string | null;
  /** created, updated, unchanged, failed */
  outcome: string;
  record_id: string | null;
  /** JSON: `{"variantIds": [...]}` for items, `{"error": {...}}` for a failed line. */
  detail: string | null;
}
