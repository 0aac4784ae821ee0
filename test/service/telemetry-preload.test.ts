import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { tracingWanted } from '../../src/telemetry/settings.ts';
import { TYPESCRIPT } from '../helpers/typescript.ts';
import { baseEnv } from '../reliability/helpers.ts';

const run = promisify(execFile);

// What a process loaded after the preload, by the modules in require's cache (the SDK's packages are CommonJS).
const PROBE = `import { createRequire } from 'node:module';
const cache = Object.keys(createRequire(import.meta.url).cache);
console.log(JSON.stringify({ sdk: cache.some((k) => k.includes('@opentelemetry/sdk-node')), instrumentation: cache.some((k) => k.includes('@opentelemetry/instrumentation')) }));`;

async function loadedWith(env: Record<string, string>): Promise<{ sdk: boolean; instrumentation: boolean }> {
  const { stdout } = await run(
    process.execPath,
    [...TYPESCRIPT, '--import', './src/telemetry/preload.ts', '--input-type=module', '-e', PROBE],
    {
      env: { ...baseEnv, ...env },
    },
  );
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

describe('the telemetry preload', () => {
  it('is on only when an OTLP endpoint is named and nothing turns it off', () => {
    assert.equal(tracingWanted({}), false);
    assert.equal(tracingWanted({ OTEL_SERVICE_NAME: 'supplyline', OTEL_TRACES_SAMPLER: 'always_on' }), false);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true);
    assert.equal(
      tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }),
      false,
    );
    assert.equal(
      tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }),
      false,
    );
  });

  it('loads no part of the SDK without the variables, and the SDK and its instrumentations with them', async () => {
    const {
      OTEL_EXPORTER_OTLP_ENDPOINT: _a,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: _b,
      ...clean
    } = baseEnv as Record<string, string>;
    assert.deepEqual(await loadedWith(clean), { sdk: false, instrumentation: false });
    // An endpoint nothing listens on: nothing is sent, since the probe makes no span.
    assert.deepEqual(await loadedWith({ ...clean, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }), {
      sdk: true,
      instrumentation: true,
    });
  });
});
