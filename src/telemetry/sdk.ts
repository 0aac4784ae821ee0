import { register } from 'node:module';
import { ROOT_CONTEXT, type Context, type Span, type TraceAPI } from '@opentelemetry/api';
import type { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import type { FastifyRequest } from 'fastify';
import { REQUEST_TRACE } from './settings.ts';

/** Paths that get no span: probes and scrapes, which load balancers and Prometheus call every few seconds. */
const UNTRACED = new Set(['/livez', '/healthz', '/readyz', '/metrics']);

const pathOf = (url: string) => {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
};

/**
 * A span that keeps its error status but not the error's words: instrumentations set the status
 * message and record exceptions from raw errors (a PostgreSQL error can quote a value), which stay
 * in the log instead.
 */
function withoutErrorText(span: Span): void {
  const setStatus = span.setStatus.bind(span);
  span.setStatus = (status) => setStatus({ code: status.code });
  span.recordException = () => {};
}

/**
 * The SDK's context manager, but a context whose span is not recorded, or the root context, is not
 * entered while no recorded span is active either: the requests that are not sampled run outside
 * any trace, as if tracing were off, and so does background work leaving a trace it is not in
 * (`untraced`). Nothing under such a span would be recorded (statements, Redis commands, `write`
 * and `append events` need a recorded parent), while entering a context costs every request, and
 * on Node 20 turns on a hook for every promise the process makes from then on (decision 0047,
 * "Measured cost"). What an unsampled request passes on, its `traceparent` for the events it
 * writes and the trace of its log lines, it passes explicitly (`requestTraceParent`,
 * `requestTraceFields` in src/telemetry/spans.ts). Made from the classes given, which are imported
 * only when tracing starts.
 */
export function sampledContextManager(Base: typeof AsyncLocalStorageContextManager, trace: TraceAPI) {
  return class SampledContextManager extends Base {
    override with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
      context: Context,
      fn: F,
      thisArg?: ThisParameterType<F>,
      ...args: A
    ): ReturnType<F> {
      const span = trace.getSpan(context);
      if ((span?.isRecording() === false || context === ROOT_CONTEXT) && !trace.getSpan(this.active())?.isRecording()) {
        return fn.apply(thisArg, args);
      }
      return super.with(context, fn, thisArg, ...args);
    }
  };
}

/**
 * Starts the OpenTelemetry SDK for traces only, configured by the standard OTEL_* variables
 * (endpoint, protocol, service name, sampler, resource attributes). What a span may hold is decided
 * here, by construction: requests record their method, route and path, never headers or the query
 * string; PostgreSQL statements their SQL text, never parameter values; Redis commands their name
 * alone. Packages are imported here, not at the top, so that the bundle loads none of them unless
 * tracing is on (an import at the top of a bundled file is hoisted).
 */
export async function startTracing(): Promise<void> {
  // ES modules are instrumented as they are imported, through a loader hook: pg and ioredis only.
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, { data: { include: ['pg', 'ioredis'] } });
  const [
    { trace },
    { AsyncLocalStorageContextManager },
    { NodeSDK },
    { FastifyOtelInstrumentation },
    { PgInstrumentation },
    { IORedisInstrumentation },
  ] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/sdk-node'),
    import('@fastify/otel'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-ioredis'),
  ]);
  const sdk = new NodeSDK({
    contextManager: new (sampledContextManager(AsyncLocalStorageContextManager, trace))(),
    // Traces only: metrics are Prometheus's (/metrics), and logs go to stdout.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        // One span per request. Hooks get none (each would cost more than it tells), and neither does the
        // handler: its span would start and end with the request's work, and every request, sampled or
        // not, would pay for it (decision 0047, "Measured cost").
        instrumentHooks: false,
        instrumentHandler: false,
        // An exception's stack and message stay in the log; the span gets its status (withoutErrorText).
        recordExceptions: false,
        ignorePaths: (route: { url: string }) => UNTRACED.has(pathOf(route.url)),
        requestHook: (span: Span, request: FastifyRequest) => {
          // Every request's log line names its trace; only a sampled one's span needs the rest.
          (request as unknown as Record<symbol, unknown>)[REQUEST_TRACE] = span.spanContext();
          if (!span.isRecording()) return;
          withoutErrorText(span);
          // The plugin records the URL as sent; the query string is left out (cursors, filters).
          span.setAttribute('url.path', pathOf(request.url));
          span.setAttribute('supplyline.request_id', request.id);
          span.updateName(request.routeOptions.url ? `${request.method} ${request.routeOptions.url}` : request.method);
        },
      }),
      new PgInstrumentation({
        enhancedDatabaseReporting: false,
        addSqlCommenterCommentToQueries: false,
        enableTraceContextPropagation: false,
        // A span per pool checkout doubled the spans for little: pool waits are in /metrics.
        ignoreConnectSpans: true,
        // Statements outside a request or a webhook attempt (the worker's polling, jobs) make no traces.
        requireParentSpan: true,
        requestHook: withoutErrorText,
      }),
      new IORedisInstrumentation({
        requireParentSpan: true,
        dbStatementSerializer: (command: string) => command,
        requestHook: withoutErrorText,
      }),
    ],
  });
  sdk.start();
}
