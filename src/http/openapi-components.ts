import { isDeepStrictEqual } from 'node:util';

/**
 * Route schemas stay inline; in the document every schema with a `title` becomes a component and a
 * `$ref`, with a use's own annotations beside it. Two shapes under one title fail the build.
 */
const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'examples',
  'example',
  'deprecated',
  'readOnly',
  'writeOnly',
]);
const DATA_KEYS = new Set(['example', 'examples', 'default', 'enum', 'const']);

function shapeOf(schema: Record<string, unknown>) {
  return Object.fromEntries(Object.entries(schema).filter(([k]) => !ANNOTATIONS.has(k)));
}

function annotationsOf(schema: Record<string, unknown>) {
  return Object.fromEntries(Object.entries(schema).filter(([k]) => ANNOTATIONS.has(k) && k !== 'title'));
}

export function nameComponents(doc: Record<string, any>): void {
  const schemas: Record<string, Record<string, unknown>> = ((doc.components ??= {}).schemas ??= {});
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) out[k] = DATA_KEYS.has(k) ? v : visit(v);
    const title = out.title;
    if (typeof title !== 'string') return out;
    const existing = schemas[title];
    if (!existing) {
      const { title: _title, ...component } = out;
      schemas[title] = component;
      return { $ref: `#/components/schemas/${title}` };
    }
    if (!isDeepStrictEqual(shapeOf(existing), shapeOf(out))) {
      throw new Error(`OpenAPI: two different schemas are titled ${title}; give one of them another title`);
    }
    const own = annotationsOf(out);
    const differing = Object.fromEntries(Object.entries(own).filter(([k, v]) => !isDeepStrictEqual(existing[k], v)));
    return { $ref: `#/components/schemas/${title}`, ...differing };
  };
  doc.paths = visit(doc.paths);
  describeSuccess(doc);
}

const words = (title: string) => title.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();

/** Replaces the framework's "Default Response" for an undescribed 2xx. */
function describeSuccess(doc: Record<string, any>) {
  for (const operations of Object.values<Record<string, any>>(doc.paths ?? {})) {
    for (const [method, operation] of Object.entries<any>(operations)) {
      for (const [status, response] of Object.entries<any>(operation.responses ?? {})) {
        if (response.description !== 'Default Response') continue;
        const target = response.content?.['application/json']?.schema?.$ref as string | undefined;
        const title = target?.split('/').pop() ?? '';
        const page = title.endsWith('Page') ? words(title.slice(0, -4)) : null;
        response.description =
          status === '202'
            ? 'Accepted'
            : page
              ? `A page of ${page}s, newest first, with the total across all pages`
              : status === '201'
                ? `Created: the ${words(title.replace(/Created$/, ''))}`
                : method === 'patch'
                  ? `The updated ${words(title)}`
                  : `The ${words(title)}`;
      }
    }
  }
}
