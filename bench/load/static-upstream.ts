// An instant "engine" for the overhead suite, run as its own process:
//
//   node dist/bench/load/static-upstream.js --model NAME
//
// It prints `static upstream listening on URL`. It answers POST /v1/chat/completions with
// a canned chat.completion, or — when the body asks for `"stream":true` — a canned short
// SSE stream (role chunk, three content chunks, finish chunk, [DONE], one write each),
// /health and /v1/models as llmgw's health poller expects, and /connections: how many
// connections it has accepted, so a proxy that opens more than it keeps alive shows.
//
// Why not the sim engine at a very high --speed: even then every request goes through its
// tokenizer, its scheduler's step loop (a timer hop per step) and one write per token, so
// its answer time has a floor and a jitter of its own that would land in the "direct"
// baseline and blur the few hundred µs a proxy adds. The overhead budget is defined
// against an instant engine; this one does no work beyond reading the body.

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { model: { type: 'string', default: 'bench-model' } } });
const model = values.model;
const created = Math.floor(Date.now() / 1000);

const completion = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-static',
    object: 'chat.completion',
    created,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: 'The quick answer is yes.' }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 24, completion_tokens: 6, total_tokens: 30 },
  }),
);
const chunk = (delta: object, finish: string | null): Buffer =>
  Buffer.from(`data: ${JSON.stringify({ id: 'chatcmpl-static', object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
const events = [
  chunk({ role: 'assistant', content: '' }, null),
  chunk({ content: 'The quick' }, null),
  chunk({ content: ' answer' }, null),
  chunk({ content: ' is yes.' }, null),
  chunk({}, 'stop'),
  Buffer.from('data: [DONE]\n\n'),
];
const models = Buffer.from(JSON.stringify({ object: 'list', data: [{ id: model, object: 'model', created, owned_by: 'bench' }] }));

// A substring test rather than JSON.parse: the upstream is the baseline, so it must cost
// as little as possible. Clients here send JSON.stringify output, which has no spaces.
const STREAM = /"stream":\s*true/;

let accepted = 0;
const server = createServer({ noDelay: true }, (req, res) => {
  const path = req.url ?? '/';
  if (req.method === 'GET') {
    if (path === '/connections') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ accepted }));
    if (path === '/health') return void res.writeHead(200, { 'content-length': 0 }).end();
    if (path === '/v1/models') return void res.writeHead(200, { 'content-type': 'application/json', 'content-length': models.length }).end(models);
    return void res.writeHead(404, { 'content-length': 0 }).end();
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (STREAM.test(Buffer.concat(chunks).toString('latin1'))) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      for (let i = 0; i < events.length - 1; i++) res.write(events[i]);
      res.end(events[events.length - 1]);
    } else {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': completion.length }).end(completion);
    }
  });
});

server.on('connection', () => accepted++);
server.listen(0, '127.0.0.1', () => {
  const a = server.address() as AddressInfo;
  process.stdout.write(`static upstream listening on http://${a.address}:${a.port}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
});
