// nginx `proxy_pass` as the reference proxy: the overhead a mature C proxy adds on this
// machine. Optional — when no nginx binary is found the caller prints a note and skips it
// (on Debian: `apt-get install -y nginx`; the service need not run, the bench starts its own).

import { accessSync, constants } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { request } from 'undici';
import { freePort, launch, type Launched } from '../load/processes.js';

/** The nginx binary: PATH first, then the sbin folders Debian installs it in (often not on a user's PATH). */
export function findNginx(): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin'];
  for (const d of dirs) {
    if (!d) continue;
    const p = join(d, 'nginx');
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return undefined;
}

export interface RunningNginx extends Launched {
  url: string;
}

/**
 * One nginx worker proxying everything to `upstreamUrl` over a keep-alive upstream, with
 * response buffering off so SSE passes through chunk by chunk (as a gateway must).
 * Everything it writes stays in a temporary prefix directory.
 */
export async function startNginx(binary: string, upstreamUrl: string): Promise<RunningNginx> {
  const upstream = new URL(upstreamUrl);
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'llmgw-bench-nginx-'));
  // As root nginx's worker runs as `nobody`, which must be able to enter the prefix.
  await chmod(dir, 0o755);
  const conf = `daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log stderr warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream engine {
    server ${upstream.host};
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://engine;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`;
  await writeFile(join(dir, 'nginx.conf'), conf);
  const url = `http://127.0.0.1:${port}`;
  let p: Launched;
  try {
    p = await launch({
      name: 'nginx',
      command: binary,
      // -e: the startup error log too goes to stderr, not /var/log/nginx.
      args: ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', 'stderr'],
      probe: async () => {
        const r = await request(`${url}/health`);
        await r.body.dump();
        return r.statusCode === 200;
      },
    });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    ...p,
    url,
    stop: async () => {
      await p.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
