// uvu reads a thrown error's `details` as the text of an assertion diff. LlmgwError keeps
// an object there, so an LlmgwError escaping a spec crashed uvu's report and silently
// dropped the rest of that suite. Specs take `test` and `suite` from here (spec/run.ts
// refuses direct imports): tests and hooks rethrow such an error as a plain one whose
// message shows its code and details.
import { suite as uvuSuite, type Callback, type Test } from 'uvu';

type Context = Record<string, unknown>;

function readable(err: unknown): unknown {
  if (typeof err !== 'object' || err === null) return err;
  const e = err as { name?: unknown; code?: unknown; message?: unknown; details?: unknown; stack?: unknown };
  if (typeof e.details !== 'object' || e.details === null) return err;
  const code = typeof e.code === 'string' ? ` [${e.code}]` : '';
  const out = new Error(`${String(e.name)}${code}: ${String(e.message)} (details: ${JSON.stringify(e.details)})`);
  if (typeof e.stack === 'string') out.stack = `Error: ${out.message}\n${e.stack.split('\n').slice(1).join('\n')}`;
  return out;
}

function guarded<T>(fn: Callback<T>): Callback<T> {
  return async (ctx) => {
    try {
      await fn(ctx);
    } catch (err) {
      throw readable(err);
    }
  };
}

// uvu reports a failing before/after hook only as every test of the suite failing, with
// no message at all: the hook's error is printed here before uvu swallows it.
function announced<T>(title: string | undefined, fn: Callback<T>): Callback<T> {
  const inner = guarded(fn);
  return async (ctx) => {
    try {
      await inner(ctx);
    } catch (err) {
      console.error(`hook of ${title ?? 'the default suite'} failed:`, err);
      throw err;
    }
  };
}

export function suite<T = Context>(title?: string, context?: T): Test<T> {
  const s = uvuSuite<T>(title, context);
  const hook = (h: Test<T>['before']): Test<T>['before'] =>
    Object.assign((fn: Callback<T>) => h(announced(title, fn)), { each: (fn: Callback<T>) => h.each(guarded(fn)) });
  return Object.assign((name: string, fn: Callback<T>) => s(name, guarded(fn)), {
    only: (name: string, fn: Callback<T>) => s.only(name, guarded(fn)),
    skip: s.skip,
    before: hook(s.before),
    after: hook(s.after),
    run: () => s.run(),
  });
}

export const test = suite();
