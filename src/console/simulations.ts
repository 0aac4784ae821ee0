import type { FastifyInstance } from 'fastify';
import { ApiError } from '../lib/errors.ts';
import { listFindings } from '../sandbox/findings.ts';
import { endRun, findRun, listRuns } from '../sandbox/runs.ts';
import { startSimulation } from '../sandbox/simulator.ts';
import type { ConsoleKit, Form } from './kit.ts';

/**
 * The simulated buyer of the sandbox the console shows (src/sandbox/simulator.ts): its latest runs with
 * their counts, and its findings, for everyone; owners start and stop runs, which any instance's worker
 * then drives (src/sandbox/worker.ts).
 */
export function registerSimulationPages(app: FastifyInstance, kit: ConsoleKit): void {
  const { page, signedIn, act, idOf } = kit;
  const { db, writes, clock, sandboxAcknowledgeMs } = kit.deps;
  const number = (raw: unknown) => (raw === undefined || String(raw).trim() === '' ? undefined : Number(raw));

  app.get('/console/simulation', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    const inSandbox = user.sandboxName !== null;
    return page(reply, 'simulation.eta', user, {
      title: 'Simulated buyer',
      section: 'simulation',
      inSandbox,
      runs: inSandbox ? await listRuns(db, user.businessId, 10) : [],
      found: inSandbox
        ? await listFindings(db, user.businessId, { now: clock(), acknowledgeMs: sandboxAcknowledgeMs })
        : { checked: 0, findings: [] },
      acknowledgeMinutes: sandboxAcknowledgeMs / 60_000,
    });
  });

  app.post('/console/simulation', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const form = request.body as Form;
    return act(reply, user, '/console/simulation', async () => {
      if (user.sandboxName === null)
        throw new ApiError('CONFLICT', 'Simulations run in a sandbox: switch to one on the Sandboxes page.');
      const run = await startSimulation(db, writes, user.businessId, {
        ordersPerMinute: number(form.ordersPerMinute) ?? Number.NaN,
        minutes: number(form.minutes),
        actor: { type: 'user', id: user.id, name: user.name },
        now: clock(),
      });
      return { notice: `Started simulation ${run.id}: its first order comes within a few seconds.` };
    });
  });

  app.post('/console/simulation/:id/stop', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const run = await findRun(db, user.businessId, idOf(request));
    if (!run) throw new ApiError('NOT_FOUND', 'No such simulation.');
    return act(reply, user, '/console/simulation', async () => {
      const stopped = await endRun(db, user.businessId, run.id, new Date(clock()).toISOString());
      return { notice: stopped ? `Stopped simulation ${run.id}.` : `Simulation ${run.id} had already ended.` };
    });
  });
}
