// A bare Node + undici reverse proxy, run as its own process:
//
//   node dist/bench/baselines/proxy.js --policy round-robin|least-inflight|tenant-hash [--tenant-header NAME] [--ring N] [--burn-us N] --upstream URL [--upstream URL ...]
//
// It prints `proxy listening on URL` when ready. It does only what any gateway must:
// read the body, JSON.parse it (a gateway has to read `model`), pick an upstream, stream
// the answer back through one keep-alive undici Pool per upstream, and abort the upstream
// request when the client goes away. So it is both the floor of a Node data port's
// overhead and the classic scheduling baselines:
// - round-robin: upstreams in turn, blind to load;
// - least-inflight: the upstream with the fewest requests this proxy has in flight (ties
//   go round-robin, so an idle fleet still spreads load);
// - tenant-hash: a consistent-hash ring (virtual nodes, as nginx's `hash … consistent`)
//   keyed on a tenant header (`--tenant-header`, default x-tenant), blind to load. The
//   oracle of cache affinity a deployment that knows its tenants would run: every request
//   of a tenant meets that tenant's cached prefix. A request without the header goes
//   round-robin. `--ring N` salts the ring's point names (`positionName`): the same
//   balancer, another draw of which tenants share an engine.
//
// `--burn-us N` spins N µs of CPU on each request before it is forwarded: a calibration,
// not a policy. A proxy that does as little as this one is cheaper per request than any
// real gateway, and on the quality suite's 2 shared cores that CPU is taken from the
// engines and the client; the tenant hash burning a gateway's extra CPU shows what its
// placement is worth at that cost.

import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { createHashRing, positionName } from './hash-ring.js';

interface Upstream {
  url: string;
  pool: Pool;
  inflight: number;
}

const { values } = parseArgs({
  options: {
    listen: { type: 'string', default: '127.0.0.1:0' },
    policy: { type: 'string', default: 'round-robin' },
    'tenant-header': { type: 'string', default: 'x-tenant' },
    ring: { type: 'string', default: '0' },
    'burn-us': { type: 'string', default: '0' },
    upstream: { type: 'string', multiple: true },
  },
});
const policy = values.policy;
if (policy !== 'round-robin' && policy !== 'least-inflight' && policy !== 'tenant-hash') {
  throw new Error(`--policy must be round-robin, least-inflight or tenant-hash, not '${policy}'`);
}
const tenantHeader = values['tenant-header'].toLowerCase();
const ringSalt = Number(values.ring);
if (!Number.isInteger(ringSalt) || ringSalt < 0) throw new Error(`--ring must be a whole number ≥ 0, not '${values.ring}'`);
const burnMs = Number(values['burn-us']) / 1000;
if (!(burnMs >= 0)) throw new Error(`--burn-us must be a number ≥ 0, not '${values['burn-us']}'`);
const upstreams: Upstream[] = (values.upstream ?? []).map((url) => ({
  url,
  pool: new Pool(url, { connections: 256, pipelining: 1, keepAliveTimeout: 30_000 }),
  inflight: 0,
}));
if (upstreams.length === 0) throw new Error('give at least one --upstream URL');
const ring = createHashRing(upstreams, (u) => positionName(upstreams.indexOf(u), ringSalt));

let turn = 0;
function pick(tenant: string | undefined): Upstream {
  const n = upstreams.length;
  if (policy === 'tenant-hash' && tenant !== undefined) return ring.owner(tenant);
  const start = turn++ % n;
  if (policy !== 'least-inflight') return upstreams[start]!;
  let best = upstreams[start]!;
  for (let k = 1; k < n; k++) {
    const u = upstreams[(start + k) % n]!;
    if (u.inflight < best.inflight) best = u;
  }
  return best;
}

/** Spins the CPU for `ms` (`--burn-us`). */
function burn(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const server = createServer({ noDelay: true }, (req, res) => {
  // A client that vanishes mid-body rejects readBody: drop that connection, keep serving.
  (async () => {
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    if (body) {
      try {
        JSON.parse(body.toString('utf8'));
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"body is not JSON"}}');
        return;
      }
    }
    if (burnMs > 0) burn(burnMs);
    const tenant = req.headers[tenantHeader];
    const up = pick(typeof tenant === 'string' ? tenant : undefined);
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    up.inflight++;
    try {
      const r = await up.pool.request({
        path: req.url ?? '/',
        method: req.method === 'POST' ? 'POST' : 'GET',
        headers: { 'content-type': 'application/json' },
        body,
        signal: abort.signal,
      });
      const type = r.headers['content-type'];
      res.writeHead(r.statusCode, typeof type === 'string' ? { 'content-type': type } : {});
      await pipeline(r.body, res);
    } catch (err) {
      if (abort.signal.aborted) return;
      if (res.headersSent) res.destroy();
      else res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `upstream ${up.url}: ${(err as Error).message}` } }));
    } finally {
      up.inflight--;
    }
  })().catch(() => res.destroy());
});

const [host, port] = (() => {
  const i = values.listen.lastIndexOf(':');
  return [values.listen.slice(0, i), Number(values.listen.slice(i + 1))] as const;
})();
server.listen(port, host, () => {
  const a = server.address() as AddressInfo;
  process.stdout.write(`proxy listening on http://${a.address}:${a.port}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void Promise.all(upstreams.map((u) => u.pool.destroy())).then(() => process.exit(0));
});
