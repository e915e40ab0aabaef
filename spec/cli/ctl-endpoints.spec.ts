// How `llmgw ctl endpoints` shows the router's view of its engines, on fixed views.
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { batchText, renderEndpoints } from '../../src/cli/commands/ctl-endpoints.js';

const BASE = { id: 'e0', url: 'http://10.0.0.1:8000', models: ['llama'], priority: 0, ready: true, reason: null, inflight: 3, breaker: 'closed', blocked: null, loadAgeMs: 400, loadError: null, prefillTokensPerMs: null };

test('the batch column: where the size comes from, what the KV cache holds where fewer, and a learnt size being probed above anything the engine ran', () => {
  assert.is(batchText({ batchCapacity: null, batchCapacityFrom: null, batchSlots: null, peakRunning: 12 }), '-', 'not known yet');
  assert.is(batchText({ batchCapacity: 64, batchCapacityFrom: 'config', batchSlots: 25, peakRunning: 25 }), '64 (config), 25 by KV');
  assert.is(batchText({ batchCapacity: 256, batchCapacityFrom: 'engine', batchSlots: 256, peakRunning: 0 }), '256 (engine)', 'a published size is a fact, not a probe');
  assert.is(batchText({ batchCapacity: 240, batchCapacityFrom: 'learnt', batchSlots: 240, peakRunning: 256 }), '240 (learnt)', 'learnt under the most it ran: slots it saw');
  assert.is(batchText({ batchCapacity: 272, batchCapacityFrom: 'learnt', batchSlots: 272, peakRunning: 256 }), '272 (learnt, seen running 256)', 'probed above the most it ran');
});

test('one line per endpoint, the probed size in its column', () => {
  const out = renderEndpoints([
    { ...BASE, load: { waiting: 0, running: 250, kvUsage: 0.41 }, batchCapacity: 272, batchCapacityFrom: 'learnt', batchSlots: 272, peakRunning: 256, prefillTokensPerMs: 12.48 },
    { ...BASE, id: 'e1', ready: false, reason: 'readiness probe: connection refused', inflight: 0, load: null, batchCapacity: null, batchCapacityFrom: null, batchSlots: null, peakRunning: 0, loadAgeMs: null },
  ]);
  const [head, a, b] = out.split('\n');
  assert.ok(head!.includes('BATCH') && head!.includes('PREFILL'));
  assert.match(a!, /^e0\s+llama\s+0\s+routable\s+3\s+0\s+250\s+272 \(learnt, seen running 256\)\s+12\.5 tok\/ms\s+41%\s+0\.4s ago\s+closed/);
  assert.match(b!, /^e1\s+llama\s+0\s+not-ready\s+0\s+-\s+-\s+-\s+-\s+-\s+never\s+closed\s+readiness probe: connection refused/);
});

test.run();
