#!/usr/bin/env node
// The package ships TypeScript sources; registering tsx's loader lets the bin run them from any cwd.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
