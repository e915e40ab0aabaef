import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { envSettings, loadConfig, parseConfig } from '../../src/config/index.js';
import { BASE, problems, tempFile } from './helpers.js';

test('each scalar key outside a list has a variable; lists have none', () => {
  assert.equal([...envSettings().keys()].sort(), [
    'LLMGW_ACCESS_LOG',
    'LLMGW_ADMIN_LISTEN',
    'LLMGW_ADMIN_TOKEN',
    'LLMGW_AGENT_INSECURE',
    'LLMGW_AGENT_LISTEN',
    'LLMGW_AGENT_TLS__CA',
    'LLMGW_AGENT_TLS__CERT',
    'LLMGW_AGENT_TLS__KEY',
    'LLMGW_CONTROL__DRAIN_GRACE_MS',
    'LLMGW_CONTROL__INTERVAL_MS',
    'LLMGW_CONTROL__LOST_AFTER_MS',
    'LLMGW_CONTROL__SETTLE_MS',
    'LLMGW_CONTROL__UNREACHABLE_AFTER_MS',
    'LLMGW_LISTEN',
    'LLMGW_LOG_LEVEL',
    'LLMGW_ROUTER__ADMISSION__AGING_MS',
    'LLMGW_ROUTER__ADMISSION__DEFAULT_BAND',
    'LLMGW_ROUTER__ADMISSION__ENABLED',
    'LLMGW_ROUTER__ADMISSION__KV_CEILING',
    'LLMGW_ROUTER__ADMISSION__MAX_QUEUED',
    'LLMGW_ROUTER__ADMISSION__PREFILL_MS_PER_REPLICA',
    'LLMGW_ROUTER__ADMISSION__PREFILL_TOKENS_PER_REPLICA',
    'LLMGW_ROUTER__ADMISSION__PRIORITY_HEADER',
    'LLMGW_ROUTER__ADMISSION__RECALL',
    'LLMGW_ROUTER__ADMISSION__RESERVED_SHARE',
    'LLMGW_ROUTER__ADMISSION__STALE_INFLIGHT_PER_REPLICA',
    'LLMGW_ROUTER__ADMISSION__TARGET_WAITING_PER_REPLICA',
    'LLMGW_ROUTER__BREAKER__FAILURES',
    'LLMGW_ROUTER__BREAKER__MAX_OPEN_MS',
    'LLMGW_ROUTER__BREAKER__OPEN_MS',
    'LLMGW_ROUTER__CONNECT_TIMEOUT_MS',
    'LLMGW_ROUTER__COOLDOWN__FAILURES',
    'LLMGW_ROUTER__COOLDOWN__MS',
    'LLMGW_ROUTER__DEFAULT_PROFILE',
    'LLMGW_ROUTER__FIRST_TOKEN_TIMEOUT_MS',
    'LLMGW_ROUTER__IDLE_TIMEOUT_MS',
    'LLMGW_ROUTER__LOAD_REFRESH_MS',
    'LLMGW_ROUTER__MAX_BODY_BYTES',
    'LLMGW_ROUTER__POLL_INTERVAL_MS',
    'LLMGW_ROUTER__PREFIX__BLOCK_CHARS',
    'LLMGW_ROUTER__PREFIX__INDEX_ENTRIES',
    'LLMGW_ROUTER__PREFIX__MAX_BLOCKS',
    'LLMGW_ROUTER__PREFIX__OFFLOAD_BYTES',
    'LLMGW_ROUTER__RETRIES__BUDGET_PERCENT',
    'LLMGW_ROUTER__RETRIES__MAX_ATTEMPTS',
    'LLMGW_ROUTER__RETRIES__MIN_RETRY_CONCURRENCY',
    'LLMGW_ROUTER__STALE_AFTER_MS',
    'LLMGW_RUNTIME__ASK_TIMEOUT_MS',
    'LLMGW_RUNTIME__SHUTDOWN_TIMEOUT_MS',
    'LLMGW_STATE_DIR',
    'LLMGW_TENANCY__BUDGET_FALLBACK',
    'LLMGW_TENANCY__HARD_BUDGETS',
    'LLMGW_TENANCY__RETENTION_DAYS',
    'LLMGW_TENANCY__STORE',
  ]);
});

test('top-level and nested keys are overridden, numbers arrive as numbers', () => {
  const c = parseConfig(BASE, 'llmgw.yaml', {
    LLMGW_LISTEN: '0.0.0.0:8080',
    LLMGW_ADMIN_LISTEN: '127.0.0.1:9090',
    LLMGW_LOG_LEVEL: 'warn',
    LLMGW_ROUTER__MAX_BODY_BYTES: '1000',
    LLMGW_RUNTIME__ASK_TIMEOUT_MS: '100',
  });
  assert.is(c.listen, '0.0.0.0:8080');
  assert.is(c.admin_listen, '127.0.0.1:9090');
  assert.is(c.log_level, 'warn');
  assert.is(c.router.max_body_bytes, 1000);
  assert.is(c.runtime.ask_timeout_ms, 100);
  // The rest of each section keeps its defaults.
  assert.is(c.router.connect_timeout_ms, 2000);
  assert.is(c.runtime.shutdown_timeout_ms, 10000);
});

test('a string setting takes the value verbatim: a token of digits stays a string', () => {
  const c = parseConfig(BASE, 'llmgw.yaml', { LLMGW_ADMIN_TOKEN: '0012345' });
  assert.is(c.admin_token, '0012345');
});

test('a variable overrides the value in the file, and the rest of the file stays', () => {
  const text = BASE + 'router:\n  max_body_bytes: 2048\n  idle_timeout_ms: 7\n';
  const c = parseConfig(text, 'llmgw.yaml', { LLMGW_ROUTER__MAX_BODY_BYTES: '4096' });
  assert.is(c.router.max_body_bytes, 4096);
  assert.is(c.router.idle_timeout_ms, 7);
});

test('a bad value is reported against its variable', () => {
  assert.equal(problems(BASE, { LLMGW_ROUTER__MAX_BODY_BYTES: 'lots' }), ['env LLMGW_ROUTER__MAX_BODY_BYTES: must be an integer, got "lots"']);
  assert.equal(problems(BASE, { LLMGW_RUNTIME__ASK_TIMEOUT_MS: '1.5' }), ['env LLMGW_RUNTIME__ASK_TIMEOUT_MS: must be an integer, got 1.5']);
  assert.equal(problems(BASE, { LLMGW_LOG_LEVEL: 'loud' }), ['env LLMGW_LOG_LEVEL: must be one of debug, info, warn, error, silent']);
  assert.equal(problems(BASE, { LLMGW_LISTEN: 'localhost' }), ['env LLMGW_LISTEN: must be HOST:PORT (e.g. 127.0.0.1:4000), got "localhost"']);
  assert.equal(problems(BASE, { LLMGW_ADMIN_TOKEN: '' }), ['env LLMGW_ADMIN_TOKEN: must not be empty']);
  assert.equal(problems(BASE, { LLMGW_ROUTER__IDLE_TIMEOUT_MS: '' }), ['env LLMGW_ROUTER__IDLE_TIMEOUT_MS: must be an integer, got null']);
  assert.equal(problems(BASE, { LLMGW_ADMIN_LISTEN: '127.0.0.1:4000' }), ['env LLMGW_ADMIN_LISTEN: must differ from listen (both use port 4000)']);
});

test('an LLMGW_ variable that names no setting is an error, with a suggestion when one is close', () => {
  assert.equal(problems(BASE, { LLMGW_ROUTER__MAX_BODY_BYTE: '1' }), ['env LLMGW_ROUTER__MAX_BODY_BYTE: is not a config setting (did you mean LLMGW_ROUTER__MAX_BODY_BYTES?)']);
  assert.equal(problems(BASE, { LLMGW_LISTN: ':1' }), ['env LLMGW_LISTN: is not a config setting (did you mean LLMGW_LISTEN?)']);
  const [line] = problems(BASE, { LLMGW_FROBNICATE: '1' });
  assert.match(line!, /^env LLMGW_FROBNICATE: is not a config setting \(settings are LLMGW_LISTEN, LLMGW_ADMIN_LISTEN, /);
  // A section or a list is not a setting: only scalar keys are.
  assert.equal(problems(BASE, { LLMGW_ROUTER: '{}' }).length, 1);
  assert.equal(problems(BASE, { LLMGW_MODELS: '[]' }).length, 1);
  assert.equal(problems(BASE, { LLMGW_MODELS__0__NAME: 'x' }).length, 1);
});

test('LLMGW_CONFIG and LLMGW_ADMIN are not settings and not errors; other prefixes are ignored', () => {
  const c = parseConfig(BASE, 'llmgw.yaml', { LLMGW_CONFIG: '/nowhere.yaml', LLMGW_ADMIN: 'http://127.0.0.1:4001', LLMGWX: '1', llmgw_listen: 'x', PATH: '/bin' });
  assert.is(c.listen, '127.0.0.1:4000');
});

test('file problems, environment problems and flag problems are all reported, in that order', () => {
  const lines = problems(BASE + 'log_level: loud\n', { LLMGW_LISTN: '1', LLMGW_ROUTER__MAX_BODY_BYTES: '0' }, { admin_listen: 'nope' });
  assert.equal(lines, [
    'llmgw.yaml: log_level: must be one of debug, info, warn, error, silent',
    'env LLMGW_LISTN: is not a config setting (did you mean LLMGW_LISTEN?)',
    'env LLMGW_ROUTER__MAX_BODY_BYTES: must be ≥ 1',
    '--admin-listen: must be HOST:PORT (e.g. 127.0.0.1:4000), got "nope"',
  ]);
});

test('an unknown variable is reported even when the file does not parse', () => {
  assert.equal(problems('listen: [\n', { LLMGW_LISTN: '1' }), [
    'llmgw.yaml: line 2, column 1: Flow sequence in block collection must be sufficiently indented and end with a ]',
    'env LLMGW_LISTN: is not a config setting (did you mean LLMGW_LISTEN?)',
  ]);
});

test('precedence: defaults < file < environment < flags', () => {
  const text = BASE + 'admin_listen: "127.0.0.1:5001"\nrouter:\n  max_body_bytes: 2048\n';
  const path = tempFile('llmgw.yaml', text);
  // Defaults where nothing sets a key.
  assert.is(loadConfig({ path, env: {} }).router.idle_timeout_ms, 30000);
  // The file over the defaults.
  assert.is(loadConfig({ path, env: {} }).admin_listen, '127.0.0.1:5001');
  assert.is(loadConfig({ path, env: {} }).router.max_body_bytes, 2048);
  // The environment over the file.
  const env = { LLMGW_LISTEN: '127.0.0.1:6000', LLMGW_ADMIN_LISTEN: '127.0.0.1:6001', LLMGW_ROUTER__MAX_BODY_BYTES: '4096' };
  const fromEnv = loadConfig({ path, env });
  assert.equal([fromEnv.listen, fromEnv.admin_listen, fromEnv.router.max_body_bytes], ['127.0.0.1:6000', '127.0.0.1:6001', 4096]);
  // Flags over the environment; what a flag does not set keeps the environment's value.
  const fromFlags = loadConfig({ path, env, overrides: { listen: '127.0.0.1:7000', admin_listen: undefined } });
  assert.equal([fromFlags.listen, fromFlags.admin_listen, fromFlags.router.max_body_bytes], ['127.0.0.1:7000', '127.0.0.1:6001', 4096]);
});

test('an override reaches a section the file does not have, and a broken section is left to its own error', () => {
  assert.is(parseConfig('listen: ":4000"\nmodels: [{ name: m }]\nsimulate: [{ model: m }]\n', 'llmgw.yaml', { LLMGW_RUNTIME__ASK_TIMEOUT_MS: '9' }).runtime.ask_timeout_ms, 9);
  assert.equal(problems(BASE + 'runtime: 5\n', { LLMGW_RUNTIME__ASK_TIMEOUT_MS: '9' }), ['llmgw.yaml: runtime: must be a mapping, got 5']);
});

test('process.env is the default environment', () => {
  const saved = process.env.LLMGW_ROUTER__STALE_AFTER_MS;
  process.env.LLMGW_ROUTER__STALE_AFTER_MS = '1234';
  try {
    assert.is(parseConfig(BASE, 'llmgw.yaml').router.stale_after_ms, 1234);
  } finally {
    if (saved === undefined) delete process.env.LLMGW_ROUTER__STALE_AFTER_MS;
    else process.env.LLMGW_ROUTER__STALE_AFTER_MS = saved;
  }
});

test.run();
