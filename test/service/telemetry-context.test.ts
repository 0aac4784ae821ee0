import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ROOT_CONTEXT, trace, TraceFlags, type Context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { tracing } from '@opentelemetry/sdk-node';
import { sampledContextManager } from '../../src/telemetry/sdk.ts';

/*
 * The context manager tracing runs with (src/telemetry/sdk.ts): an unsampled request's context is
 * not entered, a sampled one's is, as are contexts without a span (suppressing a trace), and the
 * root context (leaving one) when a recorded span is active.
 */
describe('the context manager of tracing', () => {
  const manager = new (sampledContextManager(AsyncLocalStorageContextManager, trace))();
  const sampled = new tracing.BasicTracerProvider({ sampler: new tracing.TraceIdRatioBasedSampler(1) }).getTracer(
    'test',
  );
  const unsampled = new tracing.BasicTracerProvider({ sampler: new tracing.TraceIdRatioBasedSampler(0) }).getTracer(
    'test',
  );
  const activeSpan = () => trace.getSpan(manager.active());
  const after = async <T>(value: T) => {
    await new Promise((resolve) => setImmediate(resolve));
    return value;
  };

  it("enters a recorded span's context, across awaits", async () => {
    const span = sampled.startSpan('request');
    assert.equal(span.isRecording(), true);
    const seen = await manager.with(trace.setSpan(ROOT_CONTEXT, span), () => after(activeSpan()));
    assert.equal(seen, span);
    assert.equal(activeSpan(), undefined, 'and leaves it');
  });

  it("does not enter an unsampled span's context: the work runs as if tracing were off", async () => {
    const span = unsampled.startSpan('request');
    assert.equal(span.isRecording(), false);
    assert.equal(span.spanContext().traceFlags & TraceFlags.SAMPLED, 0);
    const seen = await manager.with(
      trace.setSpan(ROOT_CONTEXT, span),
      (a: number, b: number) => after([activeSpan(), a + b]),
      undefined,
      2,
      3,
    );
    assert.deepEqual(seen, [undefined, 5], 'no active span, and the arguments are passed');
  });

  it('does not enter the root context outside any recorded span: leaving no trace enters nothing', async () => {
    let entered = 0;
    class Counting extends AsyncLocalStorageContextManager {
      override with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
        context: Context,
        fn: F,
        thisArg?: ThisParameterType<F>,
        ...args: A
      ): ReturnType<F> {
        entered++;
        return super.with(context, fn, thisArg, ...args);
      }
    }
    const counting = new (sampledContextManager(Counting, trace))();
    const seen = await counting.with(
      ROOT_CONTEXT,
      (a: number) => after([trace.getSpan(counting.active()), a]),
      undefined,
      7,
    );
    assert.deepEqual(seen, [undefined, 7], 'the work runs, with its arguments');
    assert.equal(entered, 0, 'no context was entered (on Node 20 that would turn on a hook for every promise)');
    const span = sampled.startSpan('request');
    await counting.with(trace.setSpan(ROOT_CONTEXT, span), () => counting.with(ROOT_CONTEXT, () => after(null)));
    assert.equal(entered, 2, 'under a recorded span the root context is entered');
  });

  it("enters an unsampled span's context under a recorded span, and contexts without a span", async () => {
    const outer = sampled.startSpan('request');
    const inner = unsampled.startSpan('other');
    const key = Symbol('key');
    await manager.with(trace.setSpan(ROOT_CONTEXT, outer), async () => {
      assert.equal(await manager.with(trace.setSpan(manager.active(), inner), () => after(activeSpan())), inner);
      const value = await manager.with((manager.active() as Context).setValue(key, 'kept'), () =>
        after(manager.active().getValue(key)),
      );
      assert.equal(value, 'kept');
      assert.equal(
        await manager.with(ROOT_CONTEXT, () => after(activeSpan())),
        undefined,
        'the root context is entered: work leaves the trace',
      );
    });
  });
});
