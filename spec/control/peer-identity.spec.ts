import * as assert from 'uvu/assert';
import { certificateIdentities, identityProblem, trustProblem, type PeerTls } from '../../src/control/stream/peer-identity.js';
import { suite } from '../support/uvu.js';

const test = suite('agent stream: which node a certificate speaks for');

const trusted = (identities: string[]): PeerTls => ({ kind: 'tls', authorized: true, authorizationError: null, presented: true, identities });

test('the CN and the DNS and URI SANs name the node; IP and email SANs do not', () => {
  const cert = { subject: { CN: 'node-a' }, subjectaltname: 'DNS:node-a.fleet, IP Address:10.0.0.1, URI:spiffe://fleet/node-a, email:ops@example.com, DNS:node-a' } as never;
  assert.equal(certificateIdentities(cert), ['node-a', 'node-a.fleet', 'spiffe://fleet/node-a']);
  assert.equal(certificateIdentities({ subject: { CN: ['x', 'y'] } } as never), ['x', 'y'], 'a subject with two CNs');
  assert.equal(certificateIdentities(null), []);
  assert.equal(certificateIdentities({} as never), [], 'no certificate: node gives an empty object');
});

test('a trusted certificate may register only a node it names', () => {
  assert.is(identityProblem(trusted(['node-a', 'node-a.fleet']), 'node-a.fleet'), null);
  assert.match(identityProblem(trusted(['node-a']), 'node-ab') ?? '', /node "node-ab" cannot register with a certificate issued to node-a/);
  assert.match(identityProblem(trusted(['node-a']), 'NODE-A') ?? '', /cannot register/, 'names compare exactly');
  assert.match(identityProblem(trusted([]), 'node-a') ?? '', /issued to no name/);
  assert.match(identityProblem(trusted(['node-a']), '') ?? '', /names no node_id/);
});

test('an untrusted or missing certificate is refused before any name is compared', () => {
  const untrusted: PeerTls = { kind: 'tls', authorized: false, authorizationError: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', presented: true, identities: ['node-a'] };
  assert.match(trustProblem(untrusted) ?? '', /not trusted \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)/);
  assert.match(identityProblem(untrusted, 'node-a') ?? '', /not trusted/);
  assert.match(trustProblem({ kind: 'tls', authorized: false, authorizationError: 'UNABLE_TO_GET_ISSUER_CERT', presented: false, identities: [] }) ?? '', /a client certificate is required/);
});

test('plaintext, asked for on both sides, checks no identity', () => {
  assert.is(trustProblem({ kind: 'insecure' }), null);
  assert.is(identityProblem({ kind: 'insecure' }, 'any-node'), null);
});

test.run();
