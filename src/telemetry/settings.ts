/**
 * Whether the OTEL_* variables ask for traces: an OTLP endpoint is named, and neither
 * OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none says otherwise. Read by the preload, before
 * the application, so that without them no part of the SDK is loaded.
 */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint) return false;
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  return !(env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .includes('none');
}

/** Where the request span's context is kept on a Fastify request, for its log line (set in sdk.ts, read in spans.ts). */
export const REQUEST_TRACE = Symbol.for('supplyline.trace');
