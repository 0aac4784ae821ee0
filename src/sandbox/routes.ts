import { Type } from 'typebox';
import type { ApiInstance, RouteDeps } from '../http/types.ts';
import { forbidden } from '../lib/errors.ts';
import { SimulatedOrdersResponse, SimulateOrdersBody } from './schema.ts';
import { NOT_A_SANDBOX, simulateOrders } from './simulation.ts';

const tags = ['Sandbox'];
const ref = (description: string) => Type.Unsafe<unknown>({ $ref: 'ErrorResponse#', description });

export async function sandboxRoutes(app: ApiInstance, { runWrite }: RouteDeps) {
  app.post(
    '/sandbox/simulations/orders',
    {
      config: { extension: true, sandboxOnly: true, namesOther: true },
      schema: {
        tags,
        operationId: 'simulateOrders',
        summary: 'Sandbox only: a simulated buyer places orders now',
        description:
          'Each order is of a live buyer of the sandbox at random (or `buyerId`), with lines of variants of its price ' +
          'list (or the default list), a delivery date 2 to 14 days out, a purchase-order number and properties ' +
          '(`sandbox.simulated`), made and announced (`order.created`, webhooks) as `POST /buyers/{id}/orders` makes ' +
          "them. A live business's key gets 403.",
        body: SimulateOrdersBody,
        response: {
          201: SimulatedOrdersResponse,
          403: ref('Not a sandbox (a live key), or the API key lacks the scope orders:write'),
          404: ref('No such live buyer in the sandbox (`buyerId`)'),
          409: ref(
            'The sandbox has nothing to order (no buyer, or no variant on a price list), or the Idempotency-Key is in use',
          ),
        },
      },
    },
    (request, reply) => {
      if (request.livemode) throw forbidden(NOT_A_SANDBOX);
      return runWrite(request, reply, async (ctx) => ({
        status: 201,
        body: { orders: await simulateOrders(ctx, request.body) },
      }));
    },
  );
}
