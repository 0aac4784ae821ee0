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
 * Fastify's options for the HTTP server's timeouts. A client that trickles its headers is closed
 * after `headersTimeoutMs` (checked every second, not Node's default 30 s), one that trickles its
 * body after `requestTimeoutMs`; an idle keep-alive connection is kept for `keepAliveTimeoutMs`,
 * longer than the idle timeout of the load balancers in front (60 s), so they never reuse a
 * connection we are closing.
 */
export function connectionOptions(settings: ConnectionSettings) {
  return {
    requestTimeout: settings.requestTimeoutMs,
    keepAliveTimeout: settings.keepAliveTimeoutMs,
    http: { headersTimeout: settings.headersTimeoutMs, connectionsCheckingInterval: 1000 },
    // In-flight requests finish normally during a shutdown (see registerGracefulClose), never 503.
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

/**
 * Connections whose current request was answered before its body had arrived (a 401 or 413 on a
 * body still being sent). If that body then times out, the request already has its answer: the
 * connection is closed without a second, unsolicited one.
 */
const answeredEarly = new WeakSet<Socket>();

/**
 * Errors Node's HTTP parser meets before any route runs (headers too large, a malformed request
 * line or an unknown method, a request that took too long) get the same error body as the rest.
 */
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
 * How the server treats its connections:
 * - a graceful close: every request already received finishes with its normal answer, and every
 *   answer written from then on carries `Connection: close`, so that keep-alive connections end
 *   with their current request instead of holding the process open until their idle timeout;
 * - one answer per request, even when its body arrives after the answer (see answeredEarly);
 * - an `Expect` header other than 100-continue gets a 417 with the standard error body.
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
