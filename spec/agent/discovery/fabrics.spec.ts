import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { resolveFabrics, type FabricResult } from '../../../src/agent/discovery/fabrics.js';
import { discoverHcas, type DiscoveredHca } from '../../../src/agent/discovery/infiniband.js';
import { ibRootOf } from './fixtures.js';

const h100 = (await discoverHcas(ibRootOf('h100-8x'))).hcas;
const a100 = (await discoverHcas(ibRootOf('a100-8x'))).hcas;
const roce = (await discoverHcas(ibRootOf('l40s-4x'))).hcas;

function accepted(r: FabricResult): Extract<FabricResult, { ok: true }> {
  if (!r.ok) throw new Error(`rejected: ${r.problems.map((p) => p.message).join('; ')}`);
  return r;
}
function rejected(r: FabricResult): Extract<FabricResult, { ok: false }> {
  if (r.ok) throw new Error('accepted');
  return r;
}

test('a fabric of all four NDR adapters is attached with its link layer and rate', () => {
  const r = accepted(resolveFabrics({ 'ib-a': ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'] }, h100));
  assert.equal(r.fabrics, [{ name: 'ib-a', hcas: ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'], linkLayer: 'InfiniBand', rateGbps: 400 }]);
  assert.equal(r.labels, { mlx5_0: 'ib-a', mlx5_1: 'ib-a', mlx5_2: 'ib-a', mlx5_3: 'ib-a' });
  assert.equal(r.warnings, []);
});

test('two fabrics on one node; RoCE is a fabric too', () => {
  const two = accepted(resolveFabrics({ 'ib-a': ['mlx5_0', 'mlx5_1'], 'ib-b': ['mlx5_2', 'mlx5_3'] }, h100));
  assert.equal(
    two.fabrics.map((f) => [f.name, f.hcas]),
    [
      ['ib-a', ['mlx5_0', 'mlx5_1']],
      ['ib-b', ['mlx5_2', 'mlx5_3']],
    ],
  );
  const r = accepted(resolveFabrics({ 'roce-a': ['mlx5_0'] }, roce));
  assert.equal(r.fabrics, [{ name: 'roce-a', hcas: ['mlx5_0'], linkLayer: 'Ethernet', rateGbps: 100 }]);
});

test('rejected: a fabric without HCAs', () => {
  const r = rejected(resolveFabrics({ 'ib-a': [] }, h100));
  assert.equal(r.problems, [{ code: 'fabric-without-hcas', fabric: 'ib-a', message: 'fabric ib-a lists no HCAs: name its adapters (e.g. [mlx5_0, mlx5_1]) or remove it' }]);
});

test('rejected: an HCA claimed by two fabrics', () => {
  const r = rejected(resolveFabrics({ 'ib-a': ['mlx5_0', 'mlx5_1'], 'ib-b': ['mlx5_1', 'mlx5_2'] }, h100));
  assert.equal(r.problems, [
    {
      code: 'hca-in-two-fabrics',
      hca: 'mlx5_1',
      fabrics: ['ib-a', 'ib-b'],
      message: 'HCA mlx5_1 is claimed by both ib-a and ib-b: an adapter is cabled to one fabric; fix the label that is wrong',
    },
  ]);
});

test('every problem is listed, not only the first; an invalid name is one', () => {
  const r = rejected(resolveFabrics({ 'ib a': ['mlx5_0'], empty: [], 'ib-b': ['mlx5_0'] }, h100));
  assert.equal(
    r.problems.map((p) => p.code),
    ['fabric-name-invalid', 'fabric-without-hcas', 'hca-in-two-fabrics'],
  );
});

test('rejected: one fabric mixing InfiniBand and RoCE adapters', () => {
  const node: DiscoveredHca[] = [...h100, { ...roce[0]!, name: 'mlx5_4' }];
  const r = rejected(resolveFabrics({ 'ib-a': ['mlx5_0', 'mlx5_4'] }, node));
  assert.equal(r.problems.map((p) => p.code), ['fabric-mixes-link-layers']);
  assert.match(r.problems[0]!.message, /fabric ib-a mixes InfiniBand \(mlx5_0\) and Ethernet\/RoCE \(mlx5_4\) adapters/);
});

test('an HCA named in config but not found is left out with a warning, not a rejection', () => {
  const r = accepted(resolveFabrics({ 'ib-a': ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3', 'mlx5_9'] }, h100));
  assert.equal(r.fabrics[0]!.hcas, ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3']);
  assert.equal(r.warnings, [
    {
      code: 'hca-not-found',
      fabric: 'ib-a',
      hca: 'mlx5_9',
      message: 'fabric ib-a names mlx5_9, which is not on this node (found: mlx5_0, mlx5_1, mlx5_2, mlx5_3): it is left out of the fabric; fix the name or the adapter',
    },
  ]);
});

test('an HCA with no ACTIVE port keeps its label but is not attached', () => {
  const r = accepted(resolveFabrics({ 'ib-a': ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'] }, a100));
  assert.equal(r.fabrics, [{ name: 'ib-a', hcas: ['mlx5_0', 'mlx5_1', 'mlx5_2'], linkLayer: 'InfiniBand', rateGbps: 200 }]);
  assert.is(r.labels.mlx5_3, 'ib-a');
  assert.equal(r.warnings.map((w) => w.code), ['hca-not-active']);
  assert.match(r.warnings[0]!.message, /^mlx5_3 \(fabric ib-a\) has no ACTIVE port \(port 1 INIT\/LinkUp\): .*subnet manager$/);
});

test('a fabric with no usable adapter on this node is not attached', () => {
  const none = accepted(resolveFabrics({ 'ib-a': ['mlx5_0'] }, []));
  assert.equal(none.fabrics, []);
  assert.equal(none.warnings.map((w) => w.code), ['hca-not-found', 'fabric-not-attached']);
  assert.match(none.warnings[0]!.message, /\(none were found\)/);
  const down = accepted(resolveFabrics({ 'ib-b': ['mlx5_3'] }, a100));
  assert.equal(down.fabrics, []);
  assert.ok(down.warnings.some((w) => w.code === 'fabric-not-attached' && w.fabric === 'ib-b'));
});

test('active adapters in no fabric are pointed out; with no labels at all the node is an island', () => {
  const island = accepted(resolveFabrics(undefined, h100));
  assert.equal(island.fabrics, []);
  assert.equal(island.warnings.map((w) => w.code), ['hcas-unlabelled']);
  assert.match(island.warnings[0]!.message, /^no fabric is labelled, so this node is a single-node island despite its active adapters \(mlx5_0, mlx5_1, mlx5_2, mlx5_3\)/);
  const some = accepted(resolveFabrics({ 'ib-a': ['mlx5_0', 'mlx5_1', 'mlx5_2'] }, h100));
  assert.equal(some.warnings.map((w) => w.message), ['mlx5_3 has an ACTIVE port but is in no fabric, so no replica uses it: label it if on a fabric']);
  // A node without adapters has nothing to point out.
  assert.equal(accepted(resolveFabrics(undefined, [])).warnings, []);
});

test('the rate of a fabric is that of its slowest active port; an HCA listed twice is counted once', () => {
  const slow: DiscoveredHca = { ...h100[1]!, ports: [{ ...h100[1]!.ports[0]!, rateGbps: 200 }] };
  const r = accepted(resolveFabrics({ 'ib-a': ['mlx5_0', 'mlx5_1', 'mlx5_0'] }, [h100[0]!, slow]));
  assert.equal(r.fabrics, [{ name: 'ib-a', hcas: ['mlx5_0', 'mlx5_1'], linkLayer: 'InfiniBand', rateGbps: 200 }]);
  assert.equal(r.warnings.map((w) => w.code), ['hca-listed-twice']);
});

test.run();
