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

/**
 * The application's side of tracing, through `@opentelemetry/api` alone: without the SDK (the
 * preload did not start it) every call here finds no span and does next to nothing.
 */
const tracer = trace.getTracer('supplyline');

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A span context as a W3C `traceparent` header: version 00, trace id, span id, flags. */
export function toTraceParent(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-${context.traceFlags & TraceFlags.SAMPLED ? '01' : '00'}`;
}

/** The active span as a `traceparent`, or null when there is none (no SDK, or work outside any request). */
export function activeTraceParent(): string | null {
  const span = trace.getActiveSpan();
  if (!span) return null;
  const context = span.spanContext();
  return trace.isSpanContextValid(context) ? toTraceParent(context) : null;
}

/**
 * Runs `work` in a child span of the active span, when there is one and it is sampled; otherwise
 * just runs it (no SDK, an unsampled request, a job, the CLI). A failure marks the span, without its
 * message: what an error says stays in the log.
 */
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
 * Runs one webhook attempt in a span of its own, a child of the span that appended its event
 * (`traceParent`, stored with the event), so that the trace goes from the request to the delivery.
 * `work` gets the attempt's own `traceparent` to send, or null when there is nothing to join.
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

/**
 * Runs `work` outside any trace: background work that a request merely woke (the webhook worker's
 * pass, an import) must not be counted in that request's trace.
 */
export function untraced<T>(work: () => T): T {
  return contexts.with(ROOT_CONTEXT, work);
}

/*
 * A request that is not sampled runs outside any trace (src/telemetry/sdk.ts), so what it passes on
 * is taken from the request itself, where the request span's context is kept.
 */
const requestTrace = (request: object) => (request as Record<symbol, SpanContext | undefined>)[REQUEST_TRACE];

/** The trace a Fastify request belongs to, for its log lines: `trace_id`, `span_id`, or nothing. */
export function requestTraceFields(request: object): { trace_id?: string; span_id?: string } {
  const context = requestTrace(request);
  return context ? { trace_id: context.traceId, span_id: context.spanId } : {};
}

/** The request span as a `traceparent`, sampled or not, for the events its writes append; null without tracing. */
export function requestTraceParent(request: object): string | null {
  const context = requestTrace(request);
  return context ? toTraceParent(context) : null;
}

/**
 * pino's mixin: every log line written while a span is active carries its `trace_id` and `span_id`
 * (a line that names them itself keeps its own).
 */
export function activeTraceFields(merged: object): { trace_id?: string; span_id?: string } {
  if ('trace_id' in merged) return {};
  const span = trace.getActiveSpan();
  if (!span) return {};
  const context = span.spanContext();
  return trace.isSpanContextValid(context) ? { trace_id: context.traceId, span_id: context.spanId } : {};
}

/** Sends the spans still buffered, before the process exits (src/server.ts); nothing without the SDK. */
export async function flushTraces(): Promise<void> {
  const provider = trace.getTracerProvider() as { getDelegate?: () => { forceFlush?: () => Promise<void> } };
  await provider.getDelegate?.().forceFlush?.();
}
