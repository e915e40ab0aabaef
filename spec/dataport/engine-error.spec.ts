import * as assert from 'uvu/assert';
import { rewrapEngineError } from '../../src/dataport/engine-error.js';
import { test } from '../support/uvu.js';

test('every engine error shape becomes the OpenAI shape with a string code, the message kept', () => {
  const shapes: [string, number, string, string, string | null][] = [
    // vLLM ≥ 0.10.1: nested, integer code
    ['{"error":{"message":"bad temperature","type":"BadRequestError","param":"temperature","code":400}}', 400, 'bad temperature', 'invalid_request', 'temperature'],
    // older vLLM and SGLang: flat
    ['{"object":"error","message":"This model\'s maximum context length is 8192 tokens.","type":"BadRequestError","param":null,"code":400}', 400, "This model's maximum context length is 8192 tokens.", 'context_length_exceeded', null],
    // FastAPI's own validation errors
    ['{"detail":"Not Found"}', 404, 'Not Found', 'not_found', null],
    // a proxy in between
    ['upstream says no', 403, 'upstream says no', 'forbidden', null],
    ['', 422, 'the engine answered 422 with no message', 'invalid_request', null],
    // an engine that already speaks OpenAI keeps its code
    ['{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limit_exceeded"}}', 429, 'slow down', 'rate_limit_exceeded', null],
  ];
  for (const [text, status, message, code, param] of shapes) {
    const e = rewrapEngineError(status, text, 'gpu-a-0');
    assert.equal(Object.keys(e.error).sort(), ['code', 'message', 'param', 'type'], text);
    assert.is(e.error.message, `${message} (endpoint gpu-a-0)`, text);
    assert.is(e.error.code, code, text);
    assert.is(e.error.param, param, text);
    assert.type(e.error.code, 'string');
  }
  assert.is(rewrapEngineError(400, '{}', 'e').error.type, 'invalid_request_error');
  assert.is(rewrapEngineError(429, '{}', 'e').error.type, 'rate_limit_error');
  assert.is(rewrapEngineError(401, '{}', 'e').error.type, 'authentication_error');
});

test('a code an engine made up that is not an identifier is not passed on', () => {
  const e = rewrapEngineError(400, '{"error":{"message":"x","code":"<script>"}}', 'e');
  assert.is(e.error.code, 'invalid_request');
});

test('a huge engine message is cut', () => {
  const e = rewrapEngineError(400, JSON.stringify({ message: 'x'.repeat(10_000) }), 'e');
  assert.ok(e.error.message.length < 2_100);
});

test.run();
