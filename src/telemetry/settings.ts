/**
 * Whether OTEL_* asks for traces: an OTLP endpoint is named and neither OTEL_SDK_DISABLED=true nor
 * OTEL_TRACES_EXPORTER=none says otherwise. Read by the preload, so without them no SDK is loaded.
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

/** Where a Fastify request keeps its span's context, for its log line. */
export const REQUEST_TRACE = Symbol.for('supplyline.trace');
