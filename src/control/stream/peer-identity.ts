// Which node a client certificate speaks for. An agent registers a node id in its
// first message; a certificate names the node it was issued to in its CN or a SAN, and
// the two must be equal, so a compromised or misconfigured agent cannot report for (or
// take the shards of) another node. Pure: the TLS socket's facts in, a verdict out.
import type { PeerCertificate } from 'node:tls';

/** What the server learned about the peer when the TLS session was set up. */
export type PeerTls =
  | { readonly kind: 'insecure' }
  | {
      readonly kind: 'tls';
      /** Whether the peer sent a certificate that chains to the configured CA. */
      readonly authorized: boolean;
      /** OpenSSL's reason when not authorized (`UNABLE_TO_VERIFY_LEAF_SIGNATURE`). */
      readonly authorizationError: string | null;
      /** Whether the peer sent a certificate at all. */
      readonly presented: boolean;
      readonly identities: readonly string[];
    };

/** The names a certificate is issued to: its subject CN, then its DNS and URI SANs. */
export function certificateIdentities(cert: Pick<PeerCertificate, 'subject' | 'subjectaltname'> | null | undefined): string[] {
  if (!cert || !cert.subject) return [];
  const out: string[] = [];
  const cn = cert.subject.CN as string | string[] | undefined;
  for (const name of Array.isArray(cn) ? cn : cn ? [cn] : []) out.push(name);
  // subjectaltname reads `DNS:node-1, URI:spiffe://fleet/node-1, IP Address:10.0.0.1`.
  for (const entry of (cert.subjectaltname ?? '').split(', ')) {
    const m = /^(DNS|URI):(.+)$/.exec(entry.trim());
    if (m) out.push(m[2]!);
  }
  return [...new Set(out)];
}

/** Null when TLS vouches for the peer (or plaintext was asked for); otherwise why not. */
export function trustProblem(peer: PeerTls): string | null {
  if (peer.kind === 'insecure' || peer.authorized) return null;
  return peer.presented
    ? `the client certificate is not trusted (${peer.authorizationError ?? 'unknown reason'}): it must be signed by the control plane's CA`
    : "a client certificate is required: give the agent a certificate signed by the control plane's CA";
}

/** Null when `peer` may register `nodeId`; otherwise why not, in a sentence. */
export function identityProblem(peer: PeerTls, nodeId: string): string | null {
  if (nodeId === '') return 'the Register message names no node_id';
  const untrusted = trustProblem(peer);
  if (untrusted) return untrusted;
  if (peer.kind === 'insecure') return null; // plaintext was asked for on both sides: no identity to check
  if (!peer.identities.includes(nodeId)) {
    const names = peer.identities.length > 0 ? peer.identities.join(', ') : 'no name';
    return `node ${JSON.stringify(nodeId)} cannot register with a certificate issued to ${names}: an agent speaks only for the node its certificate names (CN or SAN)`;
  }
  return null;
}
