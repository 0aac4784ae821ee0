import { register } from 'node:module';
import { ROOT_CONTEXT, type Context, type Span, type TraceAPI } from '@opentelemetry/api';
import type { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import type { FastifyRequest } from 'fastify';
import { REQUEST_TRACE } from './settings.ts';

/** Probes and scrapes get no span. */
const UNTRACED = new Set(['/livez', '/healthz', '/readyz', '/metrics']);

const pathOf = (url: string) => {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
};

/** Keeps a span's error status but not the error's words (a PostgreSQL error can quote a value): those stay in the log. */
function withoutErrorText(span: Span): void {
  const setStatus = span.setStatus.bind(span);
  span.setStatus = (status) => setStatus({ code: status.code });
  span.recordException = () => {};
}

/**
 * The SDK's context manager, except that unsampled requests and `untraced` work do not enter a
 * context: nothing under them is recorded, and entering costs every request (decision 0047). What
 * such a request passes on it passes explicitly (`requestTraceParent`, `requestTraceFields`).
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
 * Starts the SDK for traces, configured by OTEL_*. A span holds a request's method, route and path
 * (never headers or query), a statement's SQL (never parameters), a Redis command's name. Packages
 * are imported inside, so the bundle loads none of them unless tracing is on.
 */
export async function startTracing(): Promise<void> {
  // ES modules are instrumented through a loader hook as they are imported: pg and ioredis only.
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
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        // One span per request: hooks and handler get none, as every request would pay for them (decision 0047).
        instrumentHooks: false,
        instrumentHandler: false,
        // Stack and message stay in the log; the span gets its status.
        recordExceptions: false,
        ignorePaths: (route: { url: string }) => UNTRACED.has(pathOf(route.url)),
        requestHook: (span: Span, request: FastifyRequest) => {
          (request as unknown as Record<symbol, unknown>)[REQUEST_TRACE] = span.spanContext();
          if (!span.isRecording()) return;
          withoutErrorText(span);
          // The query string is left out (cursors, filters).
          span.setAttribute('url.path', pathOf(request.url));
          span.setAttribute('supplyline.request_id', request.id);
          span.updateName(request.routeOptions.url ? `${request.method} ${request.routeOptions.url}` : request.method);
        },
      }),
      new PgInstrumentation({
        enhancedDatabaseReporting: false,
        addSqlCommenterCommentToQueries: false,
        enableTraceContextPropagation: false,
        // Pool checkouts get no span: their waits are in /metrics.
        ignoreConnectSpans: true,
        // Statements outside a request or webhook attempt (polling, jobs) make no traces.
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
