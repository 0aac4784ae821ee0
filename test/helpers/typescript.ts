/**
 * Node's arguments for a child process that runs a TypeScript file of this checkout (`src/server.ts`,
 * `src/cli.ts`): none where Node strips types itself, else tsx's loader (Node 20). See
 * test/helpers/typescript.js.
 */
export const TYPESCRIPT: string[] = (process.features as { typescript?: unknown }).typescript
  ? []
  : ['--import', 'tsx'];
