import { Type, type Static } from 'typebox';
import { OrderResponse } from '../orders/schema.ts';

export const SimulateOrdersBody = Type.Object(
  {
    buyerId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'The buyer who orders (phm_); a live buyer of the sandbox at random when left out',
        examples: ['phm_01jd5x8m2k3n4p5q6r7s8t9v0w'],
      }),
    ),
    lines: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 20,
        description:
          "Lines per order, each a different variant of the buyer's price list; 1 to 5 at random when left out",
      }),
    ),
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'How many orders, 1 when left out' })),
  },
  {
    title: 'SimulateOrdersBody',
    additionalProperties: false,
    examples: [{ count: 3, lines: 2 }],
  },
);
export type SimulateOrdersInput = Static<typeof SimulateOrdersBody>;

export const SimulatedOrdersResponse = Type.Object(
  { orders: Type.Array(OrderResponse, { description: 'The orders made, as GET /api/v1/orders/{id} shows them' }) },
  { title: 'SimulatedOrdersResponse' },
);
