#!/usr/bin/env python3
"""An engine llmgw's scheduler was not written against, for the admission bench on a GPU.

Hugging Face transformers' continuous batching (its own scheduler, paged KV cache and
chunked prefill) runs a randomly initialised Llama of a real model's shape, behind a thin
OpenAI-compatible shim: /v1/completions (streaming or not), /v1/models, /health and
/metrics under vLLM's gauge names, read from the scheduler at scrape time. Weights are
random because the GPU machines reach no model hub; step times depend on shapes, not
values, and every request generates exactly its max_tokens (no EOS).

What is ours here is only the wire: the text is split on whitespace, one token a word
(as the sim's tokenizer counts), and the batch, its order and its steps are the
library's. `priority` is accepted and ignored, as that scheduler has no priorities.

    python3 bench/engines/transformers_cb.py --port 8100 --served-name bench-admission

Standard library only besides torch and transformers, so it runs on a bare GPU image.
"""

import argparse
import asyncio
import json
import os
import sys
import threading
import time
import zlib
from collections import deque

SHAPES = {
    # Llama-3.1-8B's shape: the size the sim's step model was fitted on.
    "llama-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8, vocab_size=128256),
    "llama-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8, vocab_size=128256),
}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class Engine:
    """transformers' ContinuousBatchingManager, its outputs routed to asyncio queues by request id."""

    def __init__(self, args):
        import torch
        from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

        cfg = LlamaConfig(max_position_embeddings=args.max_model_len, rope_theta=500000.0, tie_word_embeddings=False, **SHAPES[args.shape])
        t0 = time.time()
        with torch.device("cuda"):
            try:
                model = LlamaForCausalLM._from_config(cfg, dtype=torch.bfloat16)
            except TypeError:
                model = LlamaForCausalLM._from_config(cfg, torch_dtype=torch.bfloat16)
        model.eval()
        log(f"model {args.shape}: {sum(p.numel() for p in model.parameters()) / 1e9:.2f} B params on {model.device} in {time.time() - t0:.1f} s")
        gen = GenerationConfig(max_new_tokens=args.max_model_len // 2, do_sample=False, eos_token_id=-1, pad_token_id=0)
        kwargs = {}
        if args.max_batch_tokens:
            try:
                from transformers.generation.configuration_utils import ContinuousBatchingConfig

                kwargs["continuous_batching_config"] = ContinuousBatchingConfig(max_batch_tokens=args.max_batch_tokens)
            except ImportError:
                gen.max_batch_tokens = args.max_batch_tokens
        self.manager = model.init_continuous_batching(generation_config=gen, **kwargs)
        self.manager.start()
        self.routes = {}
        self.lock = threading.Lock()
        self.loop = None
        self.next_id = 0
        self.started = {}
        # The last 500 first tokens as the engine saw them, for its periodic report.
        self.first_token_ms = deque(maxlen=500)

    def processor(self):
        return getattr(self.manager, "batch_processor", None)

    def describe(self):
        p = self.processor()
        if p is None:
            return "batch processor not created yet"
        c = p.cache
        parts = [f"max_batch_tokens {getattr(c, 'max_batch_tokens', '?')}", f"blocks {getattr(c, 'num_blocks', '?')}", f"block size {getattr(c, 'block_size', '?')}", f"scheduler {type(p.scheduler).__name__}"]
        return ", ".join(parts)

    def gauges(self):
        """Running, waiting and KV use as the scheduler holds them now."""
        p = self.processor()
        pending = self.manager.input_queue.qsize()
        if p is None:
            return 0, pending, 0.0
        s = p.scheduler
        kv = 0.0
        try:
            total = p.cache.num_blocks
            kv = 1.0 - p.cache.get_num_free_blocks() / total if total else 0.0
        except Exception:
            pass
        return len(s.active_requests), len(s.waiting_requests) + pending, kv

    def submit(self, ids, max_tokens):
        rid = f"r{self.next_id}"
        self.next_id += 1
        q = asyncio.Queue()
        with self.lock:
            self.routes[rid] = q
        self.started[rid] = time.perf_counter()
        self.manager.add_request(input_ids=ids, request_id=rid, max_new_tokens=max_tokens, streaming=True)
        return rid, q

    def cancel(self, rid):
        with self.lock:
            self.routes.pop(rid, None)
        self.started.pop(rid, None)
        cancel = getattr(self.manager, "cancel_request", None)
        if cancel is not None:
            cancel(rid)

    def done(self, rid):
        with self.lock:
            self.routes.pop(rid, None)
        self.started.pop(rid, None)

    def pump(self):
        """Outputs from the generation thread to the request's queue on the event loop."""
        while True:
            out = self.manager.get_result(timeout=0.1)
            if out is None:
                continue
            with self.lock:
                q = self.routes.get(out.request_id)
            if q is not None:
                self.loop.call_soon_threadsafe(q.put_nowait, out)


def finished(out):
    f = getattr(out, "is_finished", None)
    if f is not None:
        return f()
    return getattr(out.status, "name", str(out.status)) in ("FINISHED", "FAILED")


def failed(out):
    return getattr(out.status, "name", str(out.status)) == "FAILED" or bool(getattr(out, "error", None))


class Shim:
    def __init__(self, engine, args):
        self.engine = engine
        self.args = args
        self.vocab = SHAPES[args.shape]["vocab_size"]
        self.created = int(time.time())

    def tokens(self, text):
        # Stable across runs (Python's str hash is salted); a word's id never collides with 0 (pad).
        return [1 + zlib.crc32(w.encode()) % (self.vocab - 1) for w in text.split()] or [1]

    async def handle(self, reader, writer):
        try:
            while True:
                req = await read_request(reader)
                if req is None:
                    break
                method, path, headers, body = req
                await self.route(method, path, body, reader, writer)
                if headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def route(self, method, path, body, reader, writer):
        if path == "/health":
            return await send(writer, 200, b"", "text/plain")
        if path == "/v1/models":
            data = {"object": "list", "data": [{"id": self.args.served_name, "object": "model", "created": self.created, "owned_by": "transformers", "max_model_len": self.args.max_model_len}]}
            return await send_json(writer, 200, data)
        if path == "/metrics":
            if self.args.no_metrics:
                return await send_json(writer, 404, {"error": "no metrics"})
            running, waiting, kv = self.engine.gauges()
            label = f'{{model_name="{self.args.served_name}"}}'
            text = "".join(
                f"# TYPE {n} gauge\n{n}{label} {v}\n"
                for n, v in (("vllm:num_requests_running", running), ("vllm:num_requests_waiting", waiting), ("vllm:kv_cache_usage_perc", kv))
            )
            return await send(writer, 200, text.encode(), "text/plain; version=0.0.4")
        if path == "/v1/completions" and method == "POST":
            return await self.complete(body, reader, writer)
        return await send_json(writer, 404, error(f"no route {method} {path}"))

    async def complete(self, body, reader, writer):
        try:
            req = json.loads(body)
            prompt = req["prompt"]
            max_tokens = int(req.get("max_tokens") or 16)
        except (ValueError, KeyError, TypeError) as e:
            return await send_json(writer, 400, error(f"bad request: {e}"))
        if not isinstance(prompt, str):
            return await send_json(writer, 400, error("prompt must be one string"))
        ids = self.tokens(prompt)
        if len(ids) + max_tokens > self.args.max_model_len:
            return await send_json(writer, 400, error(f"{len(ids)} prompt tokens + {max_tokens} exceed max_model_len {self.args.max_model_len}"))
        stream = req.get("stream") is True
        usage_chunk = stream and isinstance(req.get("stream_options"), dict) and req["stream_options"].get("include_usage") is True
        rid, q = self.engine.submit(ids, max_tokens)
        cid = f"cmpl-{rid}"
        # A client that goes away (llmgw recalling a request before its first token, or
        # giving up) ends the request in the engine, as vLLM aborts it.
        gone = asyncio.ensure_future(reader.read(1))
        sent = 0
        headers_out = False
        try:
            while True:
                getter = asyncio.ensure_future(q.get())
                await asyncio.wait({getter, gone}, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                    self.engine.cancel(rid)
                    return
                out = getter.result()
                if failed(out):
                    self.engine.done(rid)
                    msg = str(getattr(out, "error", "generation failed"))
                    if headers_out:
                        return await end_stream(writer)
                    return await send_json(writer, 500, error(msg))
                toks = list(out.generated_tokens)
                new = toks[sent:] if len(toks) > sent else toks
                sent += len(new)
                if stream and new:
                    if not headers_out:
                        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                        headers_out = True
                        first = time.perf_counter() - self.engine.started.get(rid, time.perf_counter())
                        self.engine.first_token_ms.append(1000 * first)
                    done = finished(out)
                    choice = {"index": 0, "text": words(new), "logprobs": None, "finish_reason": "length" if done else None}
                    await chunk(writer, sse({"id": cid, "object": "text_completion", "created": self.created, "model": self.args.served_name, "choices": [choice]}))
                if finished(out):
                    self.engine.done(rid)
                    usage = {"prompt_tokens": len(ids), "completion_tokens": sent, "total_tokens": len(ids) + sent}
                    if not stream:
                        return await send_json(writer, 200, {"id": cid, "object": "text_completion", "created": self.created, "model": self.args.served_name, "choices": [{"index": 0, "text": words(toks), "logprobs": None, "finish_reason": "length"}], "usage": usage})
                    if usage_chunk:
                        await chunk(writer, sse({"id": cid, "object": "text_completion", "created": self.created, "model": self.args.served_name, "choices": [], "usage": usage}))
                    await chunk(writer, b"data: [DONE]\n\n")
                    return await end_stream(writer)
        except ConnectionError:
            self.engine.cancel(rid)
        finally:
            # Settled before the connection's next request is read: a stream has one reader.
            gone.cancel()
            await asyncio.gather(gone, return_exceptions=True)


def words(ids):
    return "".join(f" t{i % 1000}" for i in ids)


def sse(obj):
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def error(message):
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}


async def read_request(reader):
    line = await reader.readline()
    if not line:
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers = {}
    while True:
        h = await reader.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        k, _, v = h.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            if size == 0:
                await reader.readline()
                break
            body += await reader.readexactly(size)
            await reader.readline()
    else:
        body = await reader.readexactly(int(headers.get("content-length", "0")))
    return method, target.split("?", 1)[0], headers, body


async def send(writer, status, payload, ctype):
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 500: "Internal Server Error"}[status]
    writer.write(f"HTTP/1.1 {status} {reason}\r\ncontent-type: {ctype}\r\ncontent-length: {len(payload)}\r\n\r\n".encode() + payload)
    await writer.drain()


async def send_json(writer, status, obj):
    await send(writer, status, json.dumps(obj).encode(), "application/json")


async def chunk(writer, data):
    writer.write(b"%x\r\n%s\r\n" % (len(data), data))
    await writer.drain()


async def end_stream(writer):
    writer.write(b"0\r\n\r\n")
    await writer.drain()


async def serve(engine, args):
    engine.loop = asyncio.get_running_loop()
    threading.Thread(target=engine.pump, daemon=True).start()
    shim = Shim(engine, args)
    server = await asyncio.start_server(shim.handle, args.host, args.port, backlog=1024)
    log(f"serving {args.served_name} on http://{args.host}:{args.port}")

    async def report():
        while True:
            await asyncio.sleep(5)
            r, w, kv = engine.gauges()
            ft = sorted(engine.first_token_ms)
            p50 = f"{ft[len(ft) // 2]:.1f}" if ft else "-"
            log(f"running {r} waiting {w} kv {kv:.2f}; engine-side first token p50 of last {len(ft)}: {p50} ms; {engine.describe()}")

    asyncio.ensure_future(report())
    async with server:
        await server.serve_forever()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8100)
    ap.add_argument("--served-name", default="bench-admission")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="llama-8b")
    ap.add_argument("--max-model-len", type=int, default=8192)
    ap.add_argument("--max-batch-tokens", type=int, default=0, help="tokens per step (0: the library's default)")
    ap.add_argument("--no-metrics", action="store_true", help="publish no /metrics, as an engine without gauges")
    args = ap.parse_args()
    engine = Engine(args)
    asyncio.run(serve(engine, args))


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
