"""A small, deterministic engine speaking the harness's HTTP protocol, for tests.

The "model" is arithmetic, so every log-probability can be computed by hand: after
token ``p`` the most likely next token is ``a = (7p + 3) mod 64`` (weight 8), then
``a + 1`` (weight 2), every other token weight 1. Greedy decoding follows ``a``; the
end-of-sequence id is 1 (reached after token 18). Text is tokenised one character per
token (``ord(c) mod 64``, BOS 2 first) and token ``t`` decodes to ``chr(0x100 + t)``.

``Misbehave`` switches turn it into each engine the verifier must catch: raw logits
instead of log-probabilities, logprobs scaled toward 0, ranks that contradict the values,
a forged scoring of its own answers, wrong prompt ids, one answer replayed for every
prompt, lying usage, early stops, EOS padding, garbage in the second half of answers,
ids outside the vocabulary, answers replayed from a cache or from a table of a known
corpus (its other prompts decoded off the argmax path, or not; its replays paced to look
computed, and what it cannot replay computed one at a time, its real capacity), a decode
path that differs from the scoring path (everywhere, or for chat requests only), a speed
that jumps,
hanging, crashing. ``rate`` paces generation at exactly that many tokens per second on
each connection's own clock: a request starts where the connection's previous one ended
when it arrives within ``CREDIT_S`` of that end (the few milliseconds of HTTP and thread
wake-up between two requests of one stream are not idle time), else when it arrives.
So a late wake-up does not accumulate over a trial, while a real stall in the client
(tens of milliseconds per request) still shows in its measurement.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

VOCAB = 64
EOS = 1
BOS = 2
MODEL_ID = "fake/arith-64"
CREDIT_S = 0.01


def argmax_next(prev: int, shift: int = 0) -> int:
    return (7 * prev + 3 + shift) % VOCAB


def logprobs_after(prev: int, shift: int = 0) -> list[float]:
    """The model's next-token log-probabilities after ``prev`` (``shift`` degrades it)."""
    top = argmax_next(prev, shift)
    weights = [1.0] * VOCAB
    weights[top] = 8.0
    weights[(top + 1) % VOCAB] = 2.0
    z = math.log(sum(weights))
    return [math.log(w) - z for w in weights]


def tokenize(text: str, bos: bool = True) -> list[int]:
    return ([BOS] if bos else []) + [ord(c) % VOCAB for c in text]


def decode(ids: list[int]) -> str:
    return "".join(chr(0x100 + t) for t in ids)


def retokenize(text: str) -> list[int]:
    """Inverse of ``decode``: what a verifier-side tokenizer would give for generated text."""
    return [ord(c) - 0x100 for c in text]


def greedy(prompt: list[int], n: int, *, shift: int = 0, stop_at_eos: bool = False) -> list[int]:
    out: list[int] = []
    prev = prompt[-1]
    for _ in range(n):
        prev = argmax_next(prev, shift)
        out.append(prev)
        if stop_at_eos and prev == EOS:
            break
    return out


@dataclass
class Misbehave:
    positive_logprobs: bool = False  # logits, not log-probabilities
    wrong_prompt_ids: bool = False  # reports prompt ids that differ from those sent
    drop_actual_token: bool = False  # prompt_logprobs without the actual token
    short_prompt_logprobs: bool = False  # one position too few
    nan_logprobs: bool = False
    lying_usage: bool = False  # usage.completion_tokens doubled
    early_stop: bool = False  # half the tokens, finish_reason "stop"
    eos_padding: bool = False  # the second half of every answer is EOS padding
    no_token_ids: bool = False  # never returns token ids
    chat_prompt_ids: bool = True  # chat answers carry prompt_token_ids
    cache_replies: bool = False  # a repeated request is answered at once, unpaced
    degraded_decode: bool = False  # decoding follows another argmax than the scoring path
    degraded_chat_only: bool = False  # degraded_decode only for chat requests
    scale_logprobs: float | None = None  # every logprob value multiplied (toward 0)
    forged_ranks: bool = False  # the actual token is always reported as rank 1
    forged_scoring: bool = False  # scoring its own answers: only the actual token, as the top
    replay_first: bool = False  # the first answer (and its prompt ids) for every request
    garbage_tail: bool = False  # the second half of every answer is off the argmax path
    out_of_vocab: bool = False  # the last generated id is outside the vocabulary
    slow_every: int | None = None  # generation runs at rate/4 in every other block of N
    cheap_fresh: bool = False  # once prompts repeat, a new one is answered at once, made up
    slow_after_fresh_s: float = 0.0  # once prompts repeat, the request after a new one waits
    #: prompt texts known before the run (a shipped or public corpus): a generation
    #: request for one of them is answered at once, from a table made at start-up
    known_prompts: tuple[str, ...] = ()
    lossy_unknown: bool = False  # a prompt it does not know is decoded off the argmax path
    #: known prompts replayed paced at ``rate`` (each looks computed), not at once
    paced_known: bool = False
    #: a prompt it does not know is computed alone, one at a time through one lock (its
    #: real capacity: it serialises), while known ones are replayed outside the lock
    serial_unknown: bool = False
    hang: bool = False  # never answers completions
    crash_after: int | None = None  # drop the connection from request N+1 on


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    engine: FakeEngine


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    _ended: float | None = None  # when this connection's last paced answer was due

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.engine.connections.add(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(200, {})
        elif self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        engine = self.server.engine
        if not engine.admit():
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if engine.bad.hang:
            engine.stopping.wait(60)
            self.close_connection = True
            return
        if self.path not in ("/v1/completions", "/v1/chat/completions"):
            self._send(404, {"error": {"message": "not found"}})
            return
        arrived = time.perf_counter()
        ended = self._ended
        started = ended if ended is not None and arrived - ended < CREDIT_S else arrived
        with engine.in_flight():
            answer, gen = engine.answer(self.path, body)
            if body.get("stream"):
                self._stream(answer, gen, started, body)
                return
            if body.get("_serial"):  # computed alone: it waits for the one compute slot
                with engine.compute:
                    self._ended = engine.pace(time.perf_counter(), len(gen), body)
            else:
                self._ended = engine.pace(started, len(gen), body)
            self._send(200, answer)

    def _stream(self, answer: dict[str, Any], gen: list[int], started: float, body: Any) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chat = "message" in answer["choices"][0]
        engine = self.server.engine

        def event(obj: Any) -> None:
            data = f"data: {json.dumps(obj) if not isinstance(obj, str) else obj}\n\n".encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

        for i, token in enumerate(gen):
            engine.pace(started, i + 1, body)
            choice: dict[str, Any] = {"index": 0, "finish_reason": None}
            if chat:
                choice["delta"] = {"content": decode([token])}
            else:
                choice["text"] = decode([token])
            if not engine.bad.no_token_ids:
                choice["token_ids"] = [token]
            if i == len(gen) - 1:
                choice["finish_reason"] = answer["choices"][0]["finish_reason"]
            chunk: dict[str, Any] = {"choices": [choice]}
            if i == 0 and "prompt_token_ids" in answer:
                chunk["prompt_token_ids"] = answer["prompt_token_ids"]
            if i == 0 and "prompt_token_ids" in answer["choices"][0]:
                choice["prompt_token_ids"] = answer["choices"][0]["prompt_token_ids"]
            event(chunk)
        event({"choices": [], "usage": answer["usage"]})
        event("[DONE]")
        self.wfile.write(b"0\r\n\r\n")


class FakeEngine:
    """Run with ``with FakeEngine(rate=...) as engine: engine.url``; flip ``engine.bad``."""

    def __init__(self, *, rate: float | None = None, bad: Misbehave | None = None) -> None:
        self.rate = rate
        self.bad = bad or Misbehave()
        self.requests = 0
        self.stopping = threading.Event()
        self._seen: set[str] = set()
        self.connections: set[socket.socket] = set()
        self.max_in_flight = 0
        self.generations = 0
        #: "generate" or "score" per POST, in arrival order
        self.log: list[str] = []
        self._first: tuple[list[int], list[int]] | None = None
        self._answers: set[tuple[int, ...]] = set()
        self._slow_next = False
        self._repeating = False
        self._busy = 0
        self._lock = threading.Lock()
        #: the one compute slot of an engine that serialises (``Misbehave.serial_unknown``)
        self.compute = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.engine = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeEngine:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Die like a crashed process: stop listening and cut every open connection."""
        self.stopping.set()
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
        for conn in list(self.connections):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    @contextlib.contextmanager
    def in_flight(self) -> Iterator[None]:
        with self._lock:
            self._busy += 1
            self.max_in_flight = max(self.max_in_flight, self._busy)
        try:
            yield
        finally:
            with self._lock:
                self._busy -= 1

    def admit(self) -> bool:
        with self._lock:
            self.requests += 1
            return self.bad.crash_after is None or self.requests <= self.bad.crash_after

    def _was_seen(self, body: Any) -> bool:
        key = json.dumps(body, sort_keys=True)
        with self._lock:
            return key in self._seen

    def _cached(self, body: Any) -> bool:
        key = json.dumps(body, sort_keys=True)
        with self._lock:
            seen = key in self._seen
            self._seen.add(key)
        return seen and self.bad.cache_replies

    def pace(self, started: float, tokens: int, body: Any) -> float | None:
        """Sleep until ``tokens`` are due; return when they were due (None: unpaced)."""
        if self.rate is None or body.get("_cached"):
            return None
        rate = self.rate
        every = self.bad.slow_every
        if every and (body.get("_n", 0) // every) % 2 == 1:
            rate = self.rate / 4
        due = started + tokens / rate
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        return due

    # -- the "model" ----------------------------------------------------------------------

    @staticmethod
    def _text_of(body: dict[str, Any]) -> str:
        if "messages" in body:
            return "\n".join(str(m.get("content", "")) for m in body["messages"])
        return str(body.get("prompt"))

    def _prompt_ids(self, path: str, body: dict[str, Any]) -> list[int]:
        if path.endswith("/chat/completions"):
            text = "\n".join(str(m.get("content", "")) for m in body["messages"])
            return tokenize(text)
        prompt = body["prompt"]
        if isinstance(prompt, str):
            return tokenize(prompt, bos=body.get("add_special_tokens", True))
        return [int(t) for t in prompt]

    def _generate(
        self, prompt: list[int], body: dict[str, Any], chat: bool = False
    ) -> tuple[list[int], str]:
        n = int(body.get("max_tokens") or 16)
        shift = 1 if self.bad.degraded_decode or (self.bad.degraded_chat_only and chat) else 0
        if body.get("_made_up"):
            shift = 2
        if body.get("_lossy"):
            shift = 1
        ignore_eos = bool(body.get("ignore_eos"))
        if float(body.get("temperature", 1.0)) <= 0:
            gen = greedy(prompt, n, shift=shift, stop_at_eos=not ignore_eos)
        else:
            rng = random.Random(f"{body.get('seed')}:{prompt}")
            gen, prev = [], prompt[-1]
            for _ in range(n):
                weights = [math.exp(x) for x in logprobs_after(prev, shift)]
                prev = rng.choices(range(VOCAB), weights)[0]
                gen.append(prev)
                if prev == EOS and not ignore_eos:
                    break
        reason = "stop" if gen and gen[-1] == EOS and not ignore_eos else "length"
        if self.bad.early_stop:
            gen, reason = gen[: max(1, n // 2)], "stop"
        if self.bad.eos_padding:
            half = max(1, n // 2)
            gen = gen[:half] + [EOS] * (n - half)
        if self.bad.garbage_tail and len(gen) > 1:
            half = len(gen) // 2
            gen = gen[:half] + greedy(gen[half - 1 : half], len(gen) - half, shift=1)
        if self.bad.out_of_vocab and gen:
            gen[-1] = VOCAB + 5
        return gen, reason

    def _answer_many(
        self, path: str, body: dict[str, Any], prompts: list[Any]
    ) -> tuple[dict[str, Any], list[int]]:
        """A completions body of several token-id prompts: one choice each, by index."""
        choices, usage, gen = [], {"prompt_tokens": 0, "completion_tokens": 0}, []
        for index, prompt in enumerate(prompts):
            one, gen = self.answer(path, {**body, "prompt": prompt})
            choices.append({**one["choices"][0], "index": index})
            for key in usage:
                usage[key] += one["usage"][key]
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return {"id": "cmpl-fake", "model": MODEL_ID, "choices": choices, "usage": usage}, gen

    def _own_answer_from(self, prompt: list[int]) -> int:
        """Where a remembered answer of this engine ends the prompt (len(prompt): none)."""
        with self._lock:
            answers = list(self._answers)
        for gen in answers:
            n = len(gen)
            if n and len(prompt) > n and tuple(prompt[-n:]) == gen:
                return len(prompt) - n
        return len(prompt)

    def _prompt_logprobs(self, prompt: list[int], k: int) -> list[Any]:
        out: list[Any] = [None]
        forge_from = self._own_answer_from(prompt) if self.bad.forged_scoring else len(prompt)
        for i in range(1, len(prompt)):
            lps = logprobs_after(prompt[i - 1])
            order = sorted(range(VOCAB), key=lambda t: (-lps[t], t))
            if self.bad.drop_actual_token:
                keep = [t for t in order if t != prompt[i]][:k]
            else:
                keep = [prompt[i], *(t for t in order[:k] if t != prompt[i])]
            entry: dict[str, Any] = {}
            forged = i >= forge_from
            if forged:
                keep = [prompt[i]]
            for t in keep:
                value = lps[t] + (5.0 if self.bad.positive_logprobs else 0.0)
                if self.bad.nan_logprobs:
                    value = float("nan")
                if self.bad.scale_logprobs is not None:
                    value *= self.bad.scale_logprobs
                if forged:
                    value = -0.01
                rank = 1 + sum(1 for x in lps if x > lps[t])
                if (self.bad.forged_ranks or forged) and t == prompt[i]:
                    rank = 1
                entry[str(t)] = {"logprob": value, "rank": rank, "decoded_token": decode([t])}
            out.append(entry)
        if self.bad.short_prompt_logprobs:
            out = out[:-1]
        return out

    def answer(self, path: str, body: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
        prompts = body.get("prompt")
        if isinstance(prompts, list) and prompts and isinstance(prompts[0], list):
            return self._answer_many(path, body, prompts)
        generation = body.get("prompt_logprobs") is None
        fresh = generation and not self._was_seen(body)
        if generation and not fresh:
            self._repeating = True
        if self._cached(body):
            body["_cached"] = True
        if self._slow_next and generation:
            self._slow_next = False
            time.sleep(self.bad.slow_after_fresh_s)
        if fresh and self._repeating:
            if self.bad.cheap_fresh:
                body["_cached"] = True  # answered at once
                body["_made_up"] = True
            self._slow_next = self.bad.slow_after_fresh_s > 0
        chat = path.endswith("/chat/completions")
        if generation and self.bad.known_prompts:
            if self._text_of(body) in self.bad.known_prompts:
                if not self.bad.paced_known:
                    body["_cached"] = True  # replayed from the table, at once
            else:
                if self.bad.lossy_unknown:
                    body["_lossy"] = True
                if self.bad.serial_unknown:
                    body["_serial"] = True
        prompt = self._prompt_ids(path, body)
        with self._lock:
            if body.get("prompt_logprobs") is None:
                self.generations += 1
            body["_n"] = self.generations
            self.log.append("score" if body.get("prompt_logprobs") is not None else "generate")
        gen, reason = self._generate(prompt, body, chat)
        if body.get("prompt_logprobs") is None:
            with self._lock:
                self._answers.add(tuple(gen))
        if self.bad.replay_first and body.get("prompt_logprobs") is None:
            with self._lock:
                if self._first is None:
                    self._first = (prompt, gen)
                prompt, gen = self._first
        text = decode(gen)
        choice: dict[str, Any] = {"index": 0, "finish_reason": reason}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        answer: dict[str, Any] = {"id": "cmpl-fake", "model": MODEL_ID, "choices": [choice]}
        reported = list(prompt)
        if self.bad.wrong_prompt_ids:
            reported[0] = (reported[0] + 1) % VOCAB
        if body.get("return_token_ids") and not self.bad.no_token_ids:
            choice["token_ids"] = gen
            if chat and self.bad.chat_prompt_ids:
                answer["prompt_token_ids"] = reported
            elif not chat:
                choice["prompt_token_ids"] = reported
        if not chat and body.get("prompt_logprobs") is not None:
            choice["prompt_logprobs"] = self._prompt_logprobs(prompt, int(body["prompt_logprobs"]))
        completion = len(gen) * (2 if self.bad.lying_usage else 1)
        answer["usage"] = {
            "prompt_tokens": len(prompt),
            "completion_tokens": completion,
            "total_tokens": len(prompt) + completion,
        }
        return answer, gen
