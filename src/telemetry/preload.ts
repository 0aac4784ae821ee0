/**
 * Loaded first with `node --import` (docs/operations.md): starts OpenTelemetry when OTEL_* asks
 * for it, else loads nothing. It must come first: an ES module is instrumented as it is imported.
 */
import { tracingWanted } from './settings.ts';

if (tracingWanted(process.env)) {
  const { startTracing } = await import('./sdk.ts');
  await startTracing();
}
