import {
  context as contexts,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import { REQUEST_TRACE } from './settings.ts';

/** The application's side of tracing, through `@opentelemetry/api` alone: without the SDK every call is nearly free. */
const tracer = trace.getTracer('supplyline');

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** W3C `traceparent`: version 00, trace id, span id, flags. */
export function toTraceParent(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-${context.traceFlags & TraceFlags.SAMPLED ? '01' : '00'}`;
}

/** The active span as a `traceparent`, or null. */
export function activeTraceParent(): string | null {
  const span = trace.getActiveSpan();
  if (!span) return null;
  const context = span.spanContext();
  return trace.isSpanContextValid(context) ? toTraceParent(context) : null;
}

/** Runs `work` in a child span when the active span is sampled; a failure marks it, without the message. */
export async function inChildSpan<T>(name: string, attributes: Attributes, work: () => Promise<T>): Promise<T> {
  if (!trace.getActiveSpan()?.isRecording()) return work();
  return tracer.startActiveSpan(name, { attributes }, (span) => settle(span, work()));
}

async function settle<T>(span: Span, outcome: Promise<T>): Promise<T> {
  try {
    return await outcome;
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw error;
  } finally {
    span.end();
  }
}

/**
 * One webhook attempt in a child of the span that appended its event, so the trace runs from
 * request to delivery. `work` gets the `traceparent` to send, or null.
 */
export async function inAttemptSpan<T>(
  traceParent: string | null,
  attributes: Attributes,
  work: (span: Span, traceParent: string | null) => Promise<T>,
): Promise<T> {
  const m = traceParent === null ? null : TRACEPARENT.exec(traceParent);
  const parent = m
    ? trace.setSpanContext(ROOT_CONTEXT, {
        traceId: m[1],
        spanId: m[2],
        traceFlags: Number.parseInt(m[3], 16),
        isRemote: true,
      })
    : ROOT_CONTEXT;
  return tracer.startActiveSpan('webhook attempt', { kind: SpanKind.CLIENT, attributes }, parent, (span) => {
    const context = span.spanContext();
    return settle(span, work(span, trace.isSpanContextValid(context) ? toTraceParent(context) : null));
  });
}

/** Background work a request merely woke (webhook pass, import) stays out of that request's trace. */
export function untraced<T>(work: () => T): T {
  return contexts.with(ROOT_CONTEXT, work);
}

// An unsampled request runs outside any trace (sdk.ts), so what it passes on comes from the request.
const requestTrace = (request: object) => (request as Record<symbol, SpanContext | undefined>)[REQUEST_TRACE];

/** `trace_id` and `span_id` of a Fastify request, for its log lines. */
export function requestTraceFields(request: object): { trace_id?: string; span_id?: string } {
  const context = requestTrace(request);
  return context ? { trace_id: context.traceId, span_id: context.spanId } : {};
}

/** The request span as a `traceparent`, sampled or not, for its events; null without tracing. */
export function requestTraceParent(request: object): string | null {
  const context = requestTrace(request);
  return context ? toTraceParent(context) : null;
}

/** pino's mixin: log lines carry the active span's `trace_id` and `span_id` unless they name their own. */
export function activeTraceFields(merged: object): { trace_id?: string; span_id?: string } {
  if ('trace_id' in merged) return {};
  const span = trace.getActiveSpan();
  if (!span) return {};
  const context = span.spanContext();
  return trace.isSpanContextValid(context) ? { trace_id: context.traceId, span_id: context.spanId } : {};
}

/** Flushes buffered spans before exit; nothing without the SDK. */
export async function flushTraces(): Promise<void> {
  const provider = trace.getTracerProvider() as { getDelegate?: () => { forceFlush?: () => Promise<void> } };
  await provider.getDelegate?.().forceFlush?.();
}
