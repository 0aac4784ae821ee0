import { runCli } from './cli/index.ts';

// exitCode rather than process.exit(), so output piped to another program is flushed first.
process.exitCode = await runCli(process.argv.slice(2));
