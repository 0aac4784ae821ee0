/**
 * Loaded before the application with `node --import` (npm start does; see docs/operations.md):
 * starts OpenTelemetry when the OTEL_* variables ask for it, and otherwise does nothing, so that
 * no part of the SDK is loaded. It must come first: an ES module is instrumented as it is imported.
 */
import { tracingWanted } from './settings.ts';

if (tracingWanted(process.env)) {
  const { startTracing } = await import('./sdk.ts');
  await startTracing();
}
