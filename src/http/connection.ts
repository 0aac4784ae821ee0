import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { newId } from '../lib/ids.ts';
import { ApiError, errorBody, type ErrorCode } from '../lib/errors.ts';

export interface ConnectionSettings {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

/**
 * Server timeouts: trickled headers close after `headersTimeoutMs`, trickled bodies after
 * `requestTimeoutMs`; idle keep-alive lasts `keepAliveTimeoutMs`, longer than the load balancers'
 * idle timeout, so they never reuse a connection we are closing.
 */
export function connectionOptions(settings: ConnectionSettings) {
  return {
    requestTimeout: settings.requestTimeoutMs,
    keepAliveTimeout: settings.keepAliveTimeoutMs,
    http: { headersTimeout: settings.headersTimeoutMs, connectionsCheckingInterval: 1000 },
    // In-flight requests finish normally during shutdown (registerGracefulClose), never 503.
    return503OnClosing: false,
    clientErrorHandler,
  };
}

function rawErrorResponse(status: number, code: ErrorCode, message: string): string {
  const requestId = newId('req');
  const body = JSON.stringify(errorBody(new ApiError(code, message), requestId));
  return [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/** Connections answered before their body arrived (401, 413): a later body timeout closes them without a second answer. */
const answeredEarly = new WeakSet<Socket>();

/** Errors of Node's HTTP parser, before any route, get the same error body as the rest. */
function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable && !answeredEarly.has(socket)) {
    if (error.code === 'HPE_HEADER_OVERFLOW') {
      socket.write(rawErrorResponse(431, 'HEADERS_TOO_LARGE', 'Request headers are too large'));
    } else if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      socket.write(rawErrorResponse(408, 'REQUEST_TIMEOUT', 'The request took too long to arrive'));
    } else {
      socket.write(rawErrorResponse(400, 'VALIDATION_ERROR', 'Malformed HTTP request'));
    }
  }
  socket.destroy();
}

/**
 * Graceful close: requests already received finish normally, and answers carry `Connection: close`
 * so keep-alive connections end with their request. One answer per request (answeredEarly). An
 * `Expect` other than 100-continue gets a 417.
 */
export function registerConnectionHandling(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('onResponse', (request, _reply, done) => {
    const { raw } = request;
    if (!raw.complete && raw.socket) {
      const socket = raw.socket;
      answeredEarly.add(socket);
      raw.once('end', () => answeredEarly.delete(socket));
    }
    done();
  });
  app.server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    const requestId = newId('req');
    const body = JSON.stringify(
      errorBody(new ApiError('EXPECTATION_FAILED', 'Only Expect: 100-continue is supported'), requestId),
    );
    res.writeHead(417, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'x-request-id': requestId,
      connection: 'close',
    });
    res.end(body);
  });
}
