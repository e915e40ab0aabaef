import * as assert from 'uvu/assert';
import { compose, type Stage } from '../../src/dataport/pipeline.js';
import type { RequestContext } from '../../src/dataport/request-context.js';
import { test } from '../support/uvu.js';

const ctx = {} as RequestContext;

function stage(name: string, log: string[], opts: { answer?: boolean; fail?: boolean } = {}): Stage {
  return {
    name,
    async run(_ctx, next) {
      log.push(`${name}>`);
      try {
        if (opts.fail) throw new Error(`${name} broke`);
        if (!opts.answer) await next();
      } finally {
        log.push(`<${name}`);
      }
    },
  };
}

test('stages run in order, and each finishes after the ones it handed on to', async () => {
  const log: string[] = [];
  await compose([stage('a', log), stage('b', log), stage('c', log)])(ctx);
  assert.equal(log, ['a>', 'b>', 'c>', '<c', '<b', '<a']);
});

test('a stage that answers ends the request: later stages never run, earlier ones still finish', async () => {
  const log: string[] = [];
  await compose([stage('a', log), stage('b', log, { answer: true }), stage('c', log)])(ctx);
  assert.equal(log, ['a>', 'b>', '<b', '<a']);
});

test("a stage's failure reaches the stages before it, which still release what they hold", async () => {
  const log: string[] = [];
  let caught: unknown;
  const outer: Stage = {
    name: 'outer',
    async run(_ctx, next) {
      try {
        await next();
      } catch (err) {
        caught = err;
      }
    },
  };
  await compose([outer, stage('a', log), stage('b', log, { fail: true }), stage('c', log)])(ctx);
  assert.equal(log, ['a>', 'b>', '<b', '<a']);
  assert.match(String(caught), /b broke/);
});

test.run();
