// The command line as a new user meets it: version, help, errors, colours.
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { createServer } from 'node:http';
import { listen } from '../../src/net/http-listen.js';
import { adminBaseUrl } from '../../src/cli/admin-client.js';
import { createCli, wantsColour } from '../../src/cli/llmgw-cli.js';
import { VERSION } from '../../src/version.js';
import { runCli } from '../support/cli.js';

const ANSI = /\x1b\[/;

test('--version, -v and version print the version', async () => {
  for (const flag of ['--version', '-v', 'version']) {
    const r = await runCli([flag]);
    assert.is(r.code, 0, `${flag}: ${r.stdout}${r.stderr}`);
    assert.is(r.stdout, `llmgw ${VERSION} (node ${process.version})\n`, flag);
  }
});

test('every option in help names its value; none shows clipanion\'s #0', () => {
  const defs = createCli(false).definitions();
  assert.ok(defs.length >= 8);
  for (const d of defs) {
    assert.not.match(d.usage, /#\d/, d.usage);
    for (const o of d.options) assert.not.match(o.definition, /#\d/, `${d.path}: ${o.definition}`);
  }
  const run = defs.find((d) => d.path === 'llmgw run')!;
  assert.ok(run.options.some((o) => o.definition === '--role server|agent|sim'));
});

test('help and errors carry no colours when piped, even with a colour terminal type', async () => {
  const help = await runCli(['run', '--help'], { FORCE_COLOR: '3', TERM: 'xterm-256color' });
  assert.is(help.code, 0);
  assert.match(help.stdout, /--role server\|agent\|sim/);
  assert.not.match(help.stdout, ANSI);
  const bad = await runCli(['nonsense'], { FORCE_COLOR: '3' });
  assert.is(bad.code, 1);
  assert.not.match(bad.stdout + bad.stderr, ANSI);
  assert.not.match(bad.stdout, /#0/);
});

test('colours only on a terminal, and never with NO_COLOR', () => {
  assert.is(wantsColour({ isTTY: true }, {}), true);
  assert.is(wantsColour({ isTTY: true }, { NO_COLOR: '1' }), false);
  assert.is(wantsColour({ isTTY: true }, { NO_COLOR: '' }), true, 'an empty NO_COLOR is unset (no-color.org)');
  assert.is(wantsColour({ isTTY: false }, {}), false);
  assert.is(wantsColour({}, {}), false);
});

test('run without --role says it is required and lists the roles', async () => {
  const r = await runCli(['run']);
  assert.is(r.code, 2);
  assert.is(r.stderr, 'llmgw: --role is required: one of server, agent, sim (e.g. llmgw run --role=server)\n');
  const typo = await runCli(['run', '--role=sever']);
  assert.is(typo.code, 2);
  assert.is(typo.stderr, "llmgw: unknown role 'sever': expected one of server, agent, sim\n");
});

test('--admin takes a URL or HOST:PORT; anything else names the flag and what it expects', async () => {
  assert.is(adminBaseUrl('127.0.0.1:4001', '--admin').href, 'http://127.0.0.1:4001/');
  assert.is(adminBaseUrl('localhost:4001', '--admin').href, 'http://localhost:4001/');
  assert.is(adminBaseUrl('[::1]:4001', '--admin').href, 'http://[::1]:4001/');
  assert.is(adminBaseUrl('https://gw.example:9443', '--admin').href, 'https://gw.example:9443/');
  for (const bad of ['127.0.0.1', 'ftp://x:1', 'http://', '127.0.0.1:99999']) {
    assert.throws(() => adminBaseUrl(bad, 'LLMGW_ADMIN'), (e: Error) => e.message === `LLMGW_ADMIN: expected an http(s) URL or HOST:PORT (e.g. http://127.0.0.1:4001 or 127.0.0.1:4001), got '${bad}'`, bad);
  }
  const r = await runCli(['ctl', 'actors', '--admin', 'nowhere']);
  assert.is(r.code, 1);
  assert.is(r.stderr, "llmgw ctl: --admin: expected an http(s) URL or HOST:PORT (e.g. http://127.0.0.1:4001 or 127.0.0.1:4001), got 'nowhere'\n");
});

test('ctl pointed at something that is not an admin port says so instead of failing to parse its page', async () => {
  const proxy = createServer((_req, res) => {
    res.writeHead(502, { 'content-type': 'text/html' });
    res.end('<html><body>Bad Gateway</body></html>');
  });
  const url = await listen(proxy, '127.0.0.1:0', { key: 'listen' });
  try {
    const r = await runCli(['ctl', 'nodes', '--admin', url]);
    assert.is(r.code, 1);
    assert.is(r.stderr, `llmgw ctl: ${url}/admin/v1/nodes: status 502 with a body that is not JSON; is ${url}/ the admin port of llmgw?\n`);
  } finally {
    proxy.close();
  }
});

test.run();
