import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export interface CheckedResponse {
  method: string;
  /** The request's URL, with its query string. */
  url: string;
  /** The request's headers and body text, when known. */
  requestHeaders?: Record<string, unknown>;
  requestBody?: string;
  status: number;
  headers: Record<string, unknown>;
  /** The raw body text. */
  body: string;
}

interface Operation {
  pattern: RegExp;
  /** Characters of the path template outside its parameters. */
  literal: number;
  parameters: any[];
  requestBody?: any;
  responses: Record<string, any>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Turns `#/components/schemas/X` into `#/$defs/X`, so one response schema compiles on its own. */
function rewriteRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    out[key] =
      key === '$ref' && typeof value === 'string'
        ? value.replace('#/components/schemas/', '#/$defs/')
        : rewriteRefs(value);
  }
  return out;
}

function resolve(doc: any, node: any): any {
  if (!node?.$ref) return node;
  const path = (node.$ref as string)
    .replace(/^#\//, '')
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  return resolve(
    doc,
    path.reduce((n: any, p) => n?.[p], doc),
  );
}

/**
 * Checks a response against an OpenAPI 3.1 document: the status is declared for the operation,
 * the body matches the declared schema, and every header the document marks required is present.
 * Requests the document does not describe (unknown paths, /healthz, HEAD) are not checked.
 */
export function createResponseChecker(document: unknown) {
  const doc = document as any;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  // Query and header values are text: coerce them as the server does before checking.
  const textAjv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, coerceTypes: 'array' });
  addFormats(textAjv);
  const defs = rewriteRefs(doc.components?.schemas ?? {}) as Record<string, unknown>;
  const compiled = new Map<unknown, ValidateFunction>();
  const compiledParams = new Map<unknown, ValidateFunction>();
  const compile = (schema: unknown) => {
    let fn = compiled.get(schema);
    if (!fn) {
      fn = ajv.compile({ ...(rewriteRefs(schema) as object), $defs: defs });
      compiled.set(schema, fn);
    }
    return fn;
  };

  const operations = new Map<string, Operation[]>();
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths ?? {})) {
    const pattern = new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`);
    for (const method of METHODS) {
      if (!item[method]) continue;
      const list = operations.get(method.toUpperCase()) ?? [];
      const op = item[method];
      list.push({
        pattern,
        literal: path.replace(/\{[^}]+\}/g, '').length,
        parameters: [...(item.parameters ?? []), ...(op.parameters ?? [])],
        requestBody: op.requestBody,
        responses: op.responses ?? {},
      });
      operations.set(method.toUpperCase(), list);
    }
  }
  // As the router does: a literal segment (/orders/export) wins over a parameter (/orders/{id}).
  for (const list of operations.values()) list.sort((a, b) => b.literal - a.literal);

  /**
   * A request the server accepted (2xx) must be one the document allows: every required
   * parameter sent, every parameter sent declared and valid, the body valid. Otherwise a
   * validating proxy or a generated client would refuse what the server takes.
   */
  function checkRequest(operation: Operation, response: CheckedResponse, where: string): string[] {
    const problems: string[] = [];
    const query = new URLSearchParams(response.url.split('?')[1] ?? '');
    const headers = Object.fromEntries(
      Object.entries(response.requestHeaders ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
    );
    for (const param of operation.parameters.map((p) => resolve(doc, p))) {
      if (param.in !== 'query' && param.in !== 'header') continue;
      const raw = param.in === 'query' ? (query.get(param.name) ?? undefined) : headers[param.name.toLowerCase()];
      // A header sent twice reaches the server as one value, joined as Node joins it.
      const value = Array.isArray(raw) ? raw.join(', ') : raw;
      if (value === undefined) {
        if (param.required)
          problems.push(
            `${where}: the server accepted a request without the required ${param.in} parameter ${param.name}`,
          );
        continue;
      }
      let validate = compiledParams.get(param);
      if (!validate) {
        validate = textAjv.compile({
          type: 'object',
          properties: { value: rewriteRefs(param.schema ?? {}) },
          $defs: defs,
        });
        compiledParams.set(param, validate);
      }
      if (!validate({ value }))
        problems.push(
          `${where}: the server accepted ${param.in} parameter ${param.name}=${String(value)}, which the document refuses`,
        );
    }
    const declared = new Set(
      operation.parameters
        .map((p) => resolve(doc, p))
        .filter((p) => p.in === 'query')
        .map((p) => p.name),
    );
    for (const name of new Set(query.keys())) {
      if (!declared.has(name)) problems.push(`${where}: the server accepted the undeclared query parameter ${name}`);
    }
    const schema = resolve(doc, operation.requestBody)?.content?.['application/json']?.schema;
    if (schema && response.requestBody) {
      let body: unknown;
      try {
        body = JSON.parse(response.requestBody);
      } catch {
        return problems;
      }
      const validate = compile(schema);
      if (!validate(body)) {
        const errors = (validate.errors ?? []).slice(0, 5).map((e) => `${e.instancePath || '(root)'} ${e.message}`);
        problems.push(
          `${where}: the server accepted a body the document refuses: ${errors.join('; ')}; body: ${response.requestBody.slice(0, 300)}`,
        );
      }
    }
    return problems;
  }

  /** The problems found, empty when the response matches the document. */
  return function check(response: CheckedResponse): string[] {
    const path = response.url.split('?')[0];
    const operation = operations.get(response.method.toUpperCase())?.find((op) => op.pattern.test(path));
    if (!operation) return [];
    const where = `${response.method} ${path} → ${response.status}`;
    if (response.status < 300) {
      const refused = checkRequest(operation, response, where);
      if (refused.length > 0) return refused;
    }
    const code = String(response.status);
    const declared = operation.responses[code] ?? operation.responses[`${code[0]}XX`] ?? operation.responses.default;
    if (!declared) return [`${where}: status not declared (declared: ${Object.keys(operation.responses).join(', ')})`];
    const spec = resolve(doc, declared);
    const problems: string[] = [];
    const headers = Object.fromEntries(Object.entries(response.headers).map(([k, v]) => [k.toLowerCase(), v]));
    for (const [name, header] of Object.entries<any>(spec.headers ?? {})) {
      const h = resolve(doc, header);
      if (h.required && headers[name.toLowerCase()] === undefined)
        problems.push(`${where}: required header ${name} missing`);
    }
    const ndjson = spec.content?.['application/x-ndjson'];
    if (ndjson) {
      // Newline-delimited JSON: each line must be JSON, and the declared content type is sent.
      if (!/^application\/x-ndjson/.test(String(headers['content-type'])))
        problems.push(`${where}: content type ${headers['content-type']}, not application/x-ndjson`);
      for (const line of response.body.split('\n').filter(Boolean)) {
        try {
          JSON.parse(line);
        } catch {
          return [...problems, `${where}: a line is not JSON: ${line.slice(0, 200)}`];
        }
      }
      return problems;
    }
    const content = spec.content?.['application/json'];
    if (!content) {
      if (response.body !== '') problems.push(`${where}: a body was sent, but the document declares none`);
      return problems;
    }
    let body: unknown;
    try {
      body = JSON.parse(response.body);
    } catch {
      return [...problems, `${where}: body is not JSON: ${response.body.slice(0, 200)}`];
    }
    if (content.schema) {
      const validate = compile(content.schema);
      if (!validate(body)) {
        const errors = (validate.errors ?? []).slice(0, 5).map((e) => `${e.instancePath || '(root)'} ${e.message}`);
        problems.push(
          `${where}: body does not match the declared schema: ${errors.join('; ')}; body: ${response.body.slice(0, 300)}`,
        );
      }
    }
    return problems;
  };
}

export type ResponseChecker = ReturnType<typeof createResponseChecker>;

/**
 * The document with every local `$ref` replaced by what it names (siblings of a `$ref` kept), for
 * tools that read schemas directly rather than through a validator. The document has no cycles.
 */
export function dereference<T>(document: T): T {
  const doc = document as any;
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (node === null || typeof node !== 'object') return node;
    const { $ref, ...rest } = node as Record<string, unknown>;
    const own = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, visit(v)]));
    if (typeof $ref !== 'string' || !$ref.startsWith('#/')) return $ref === undefined ? own : { $ref, ...own };
    return { ...(visit(resolve(doc, { $ref })) as object), ...own };
  };
  return visit(doc) as T;
}
