import { Type } from 'typebox';
import { DateTime, Id, ListEnvelope, Nullable, PageQuery } from '../http/schema.ts';

export const ImportParams = Type.Object({ id: Id('Import id', 'imp_01jd5x8m2k3n4p5q6r7s8t9v0w') });

export const CreateImportQuery = Type.Object(
  {
    dryRun: Type.Optional(
      Type.Boolean({ default: false, description: 'Check every line and report as usual, and write nothing' }),
    ),
    onError: Type.Optional(
      Type.Enum(['continue', 'stop'], {
        default: 'continue',
        description: 'After a failed line: go on with the next (continue), or stop the import there (stop)',
      }),
    ),
  },
  { additionalProperties: false },
);

const Counts = Type.Object(
  {
    created: Type.Integer(),
    updated: Type.Integer(),
    unchanged: Type.Integer({ description: 'Patches that changed nothing' }),
    failed: Type.Integer(),
  },
  { description: 'Lines done, by outcome' },
);

export const ImportResponse = Type.Object(
  {
    id: Type.String(),
    state: Type.Union(
      [Type.Literal('QUEUED'), Type.Literal('RUNNING'), Type.Literal('COMPLETED'), Type.Literal('STOPPED')],
      {
        description:
          'QUEUED until an instance takes it up; RUNNING; COMPLETED when every line is done (failed lines included); ' +
          'STOPPED at the first failed line when onError=stop',
      },
    ),
    dryRun: Type.Boolean(),
    onError: Type.Union([Type.Literal('continue'), Type.Literal('stop')]),
    bytes: Type.Integer({ description: 'The size of the file received' }),
    lines: Type.Integer({ description: 'Lines in the file, blank ones included' }),
    linesDone: Type.Integer({ description: 'Lines done, in order: line n is done once linesDone >= n' }),
    counts: Counts,
    linesPerSecond: Type.Number({ description: 'Lines done per second since the import started' }),
    createdAt: DateTime('When the whole file had been received'),
    startedAt: Nullable(DateTime('When an instance first took it up')),
    finishedAt: Nullable(DateTime('When it completed or stopped')),
  },
  { title: 'Import' },
);

export const ImportPage = ListEnvelope(ImportResponse, 'ImportPage');
export const ListImportsQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });
