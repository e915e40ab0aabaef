// A throwaway certificate authority made with the openssl CLI, for specs of the mTLS
// agent stream: a CA, a server certificate for loopback, and client certificates that
// name a node id in their CN and a DNS SAN.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Pem {
  readonly cert: string;
  readonly key: string;
}

export interface TestCa {
  readonly ca: string;
  /** For 127.0.0.1 and localhost. */
  server(): Pem;
  /** CN and DNS SAN `nodeId`; `san: false` leaves the SAN out (CN only). */
  client(nodeId: string, opts?: { san?: boolean }): Pem;
  remove(): void;
}

const openssl = (dir: string, args: string[]): void => {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
};

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export function createTestCa(name = 'llmgw-test-ca'): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'llmgw-ca-'));
  openssl(dir, ['req', '-x509', ...EC, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', `/CN=${name}`]);
  let n = 0;
  const issue = (cn: string, ext: string): Pem => {
    const id = `leaf${n++}`;
    writeFileSync(join(dir, `${id}.ext`), `basicConstraints=CA:FALSE\n${ext}\n`);
    openssl(dir, ['req', ...EC, '-keyout', `${id}.key`, '-out', `${id}.csr`, '-subj', `/CN=${cn}`]);
    openssl(dir, ['x509', '-req', '-in', `${id}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${id}.crt`, '-days', '2', '-extfile', `${id}.ext`]);
    return { cert: readFileSync(join(dir, `${id}.crt`), 'utf8'), key: readFileSync(join(dir, `${id}.key`), 'utf8') };
  };
  return {
    ca: readFileSync(join(dir, 'ca.crt'), 'utf8'),
    server: () => issue('llmgw-control', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth'),
    client: (nodeId, opts = {}) => issue(nodeId, `${opts.san === false ? '' : `subjectAltName=DNS:${nodeId}\n`}extendedKeyUsage=clientAuth`),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
