import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import * as assert from 'uvu/assert';
import { onClientGone } from '../../src/net/client-gone.js';
import { until } from '../support/until.js';
import { test } from '../support/uvu.js';

test('a client that pipelines: one end listener per connection, whatever its requests in flight, and each told when it ends', async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error): void => void warnings.push(w.name);
  process.on('warning', onWarning);
  const held: { req: IncomingMessage; res: ServerResponse; gone: number; stop: () => void }[] = [];
  const server = createServer((req, res) => {
    const h = { req, res, gone: 0, stop: () => {} };
    h.stop = onClientGone(req, res, () => void h.gone++);
    held.push(h);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const port = (server.address() as AddressInfo).port;
    // A connection with one request in flight: the end listeners node:http and we add.
    const single = connect(port, '127.0.0.1');
    single.write('GET /single HTTP/1.1\r\nhost: x\r\n\r\n');
    await until(() => held.length === 1, 'the single request in flight');
    const one = held.pop()!;
    const base = one.req.socket.listenerCount('end');
    const client = connect(port, '127.0.0.1');
    client.on('error', () => {});
    let pipelined = '';
    for (let i = 0; i < 12; i++) pipelined += `GET /${i} HTTP/1.1\r\nhost: x\r\n\r\n`;
    client.write(pipelined);
    await until(() => held.length === 12, 'all twelve requests in flight at once');
    const socket = held[0]!.req.socket;
    assert.is(socket.listenerCount('end'), base, 'twelve requests in flight: as many end listeners as with one');
    held[0]!.stop();
    client.end();
    await until(() => held.slice(1).every((h) => h.gone > 0), 'every request still listening told the client went');
    assert.is(held[0]!.gone, 0, 'not the one that stopped listening');
    one.res.end();
    single.destroy();
    await new Promise((r) => setImmediate(r));
    assert.equal(warnings, [], 'no MaxListenersExceededWarning');
  } finally {
    process.off('warning', onWarning);
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

test.run();
