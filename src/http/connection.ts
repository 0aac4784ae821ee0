import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { newId } from '../lib/ids.ts';
import { ApiError, errorBody, type ErrorCode } from './errors.ts';

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
  return [`HTTP/1.1 ${status} ${STATUS_CODES[status]}`, 'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`, `X-Request-Id: ${requestId}`, 'Connection: close', '', body].join('\r\n');
}

/**
 * Errors Node's HTTP parser meets before any route runs (headers too large, a malformed request
 * line or an unknown method, a request that took too long) get the same error body as the rest.
 */
function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
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
 * A graceful close: every request already received finishes with its normal answer, and every
 * answer written from then on carries `Connection: close`, so that keep-alive connections end with
 * their current request instead of holding the process open until their idle timeout.
 */
export function registerGracefulClose(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => { closing = true; });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });
}
