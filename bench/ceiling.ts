import { spawn } from 'node:child_process';

export interface Ceiling {
  url: string;
  close(): Promise<void>;
}

/**
 * A bare node:http server in a process of its own, as the server under test runs: in the
 * benchmark's process it would share an event loop with autocannon, which about halves what it
 * answers. `echo` sends each request's body back; otherwise every request gets `body` with
 * `contentType`. The child prints its port, and stops when its stdin closes.
 */
function startChild(mode: 'fixed' | 'echo', body: Buffer = Buffer.alloc(0), contentType = ''): Promise<Ceiling> {
  const source = `
    const http = require('node:http');
    const [mode, bodyBase64, contentType] = process.argv.slice(1);
    const body = Buffer.from(bodyBase64, 'base64');
    const server = http.createServer((req, res) => {
      if (mode === 'fixed') {
        res.writeHead(200, { 'content-type': contentType, 'content-length': body.length });
        return res.end(body);
      }
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const echoed = Buffer.concat(chunks);
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': echoed.length });
        res.end(echoed);
      });
    });
    server.listen(0, '127.0.0.1', () => console.log(server.address().port));
    process.stdin.on('end', () => process.exit(0));
    process.stdin.resume();`;
  const child = spawn(process.execPath, ['-e', source, mode, body.toString('base64'), contentType], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the ceiling server exited ${code}`)));
    child.stdout.once('data', (d: Buffer) => {
      child.removeAllListeners('exit');
      resolve({
        url: `http://127.0.0.1:${Number(String(d).trim())}`,
        close: () =>
          new Promise((done) => {
            child.once('exit', () => done());
            child.stdin.end();
          }),
      });
    });
  });
}

/**
 * The fastest a node:http server on this machine can answer the get-order request: the exact
 * bytes and content type, with no routing, auth, database or serialisation.
 */
export const startCeiling = (body: Buffer, contentType: string): Promise<Ceiling> =>
  startChild('fixed', body, contentType);

/** The same for a write: a node:http server that reads the request's body and sends it back. */
export const startEchoCeiling = (): Promise<Ceiling> => startChild('echo');
