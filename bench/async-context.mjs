// Loaded with --import by `npm run bench -- --only tracing --floor` (bench/tracing.ts): enters an
// AsyncLocalStorage, as a tracer's context manager does, and nothing else. What the server then
// loses is what any tracing on this Node costs before it records anything.
import { AsyncLocalStorage } from 'node:async_hooks';

new AsyncLocalStorage().enterWith({});
