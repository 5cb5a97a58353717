"""The deterministic CPU model endpoint: an OpenAI-compatible server on 127.0.0.1 imitating the NeMo RL
vLLM HTTP server contract (chat completions with token ids and logprobs, /tokenize, /v1/models).

Each Gym instance gets its own base URL, `/e/<env>/v1`, so the endpoint knows which environment a request
serves; the harness picks the active script (case and mode) per environment out of band. A load run (gymgate.load)
has many rollouts of one environment in flight at once instead: each is routed (`route`) under the tag its row carries
(ROLLOUT_TAG), and a request is answered from the script of the rollout it names; a judge's request, which carries
nothing of the row, goes to the rollout whose answer it judges. Every request and reply is recorded. It never answers 429 or 5xx of its own (Gym retries those without end): anything it cannot
or must not answer gets a 400 saying why, recorded as a contract violation. A fault path's fault (gymgate.faults)
is the one exception: the endpoint fails the call it names, as a real server would (endpoint/faults.py).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gymgate.endpoint import POLICY_MODEL, ROLLOUT_TAG
from gymgate.endpoint import faults as injected_faults
from gymgate.endpoint.faults import Saturation
from gymgate.endpoint.latency import LatencyModel, call_key
from gymgate.endpoint.script import UNSCRIPTED, Script, logprobs
from gymgate.endpoint.tokenizer import EOS, MAX_LENGTH, assistant_body, build_tokenizer, encode, render
from gymgate.outcomes import CONTRACT, GYM, HARNESS
from gymgate.text import content_text

POLICY, JUDGE, TOKENIZE = "policy", "judge", "tokenize"
UNTAGGED = (JUDGE, TOKENIZE)  # requests that carry nothing of their rollout's row: a load run routes them by content
PROMPTS_KEPT = 4096  # prompts the endpoint remembers (ModelEndpoint.prompt_ids), the oldest forgotten first


@dataclass
class Exchange:
    """One request the endpoint saw, and what it answered."""

    env: str
    route: str
    body: dict[str, Any]
    status: int = 200
    kind: str = ""
    turn: int | None = None
    reply: dict[str, Any] | None = None
    violation: str = ""
    blame: str = ""  # who is to blame for a refusal (gymgate.outcomes): the request contract, Gym, or the endpoint
    path_id: str = ""
    activation: int = 0
    injected: str = ""  # the fault the endpoint answered this attempt with (endpoint/faults.py), if any
    rollout: str = ""  # the load run's rollout it was answered for (`ModelEndpoint.route`), if any
    waited_s: float = 0.0  # the model latency it was answered after (`ModelEndpoint.route`'s latency model)
    at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class Sampling:
    """The RL generation overrides every policy request must carry (NeMo RL's sampling guard)."""

    temperature: float
    top_p: float


class Rejected(Exception):
    """A request the endpoint refuses (HTTP 400). `blame`: CONTRACT when an RL override or sampling parameter did
    not reach the model, GYM when Gym sent something no vLLM server would accept."""

    def __init__(self, message: str, blame: str = GYM):
        super().__init__(message)
        self.message, self.blame = message, blame


class ModelEndpoint:
    def __init__(self, sampling: Sampling, tokenizer=None):
        self.sampling = sampling
        self.tokenizer = tokenizer or build_tokenizer()
        self.eos_id = self.tokenizer.convert_tokens_to_ids(EOS)
        self._scripts: dict[str, tuple[Script, int]] = {}
        self._faults: dict[int, injected_faults.FaultPlan] = {}  # activation -> the fault its path injects
        self._shared: dict[str, tuple[str, ...]] = {}  # a shared Gym instance's URL name -> its environments
        self._activations = 0
        self._routes: dict[str, tuple[str, Script, int]] = {}  # rollout tag -> its environment, script, activation
        # rollout tag -> kind (UNTAGGED) -> the requests of that kind its path made alone, in order (route); and how
        # many of each were routed to it so far (counted when routed: two alike in flight never both go to one)
        self._expected: dict[str, dict[str, list[str]]] = {}
        self._claimed: dict[tuple[str, str], int] = {}
        self._last_tokenized: dict[str, str] = {}  # rollout tag -> the last /tokenize routed to it (a retry repeats it)
        self._latency: dict[str, LatencyModel] = {}  # rollout tag -> how long its model calls take (`route`)
        # The policy server saturated for a load run's rollouts, and until when (time.monotonic): `saturate`
        self._saturation: tuple[Saturation, float] | None = None
        self._prompts: dict[str, tuple[int, ...]] = {}  # a request's messages and tools -> its prompt ids
        self._answered: dict[tuple[int, str], int] = {}  # (activation, caller) -> calls answered (`_turn`)
        self._lock = threading.Lock()
        self.exchanges: list[Exchange] = []
        self._server = None
        self._connections: dict[tuple, asyncio.Transport] = {}  # client address -> its connection (a reset drops it)
        self._thread: threading.Thread | None = None
        self.port: int | None = None

    # ----- control (called from the harness thread) -----
    def set_script(self, env: str, script: Script | None, fault: injected_faults.FaultPlan | None = None) -> None:
        """Make `script` answer for `env` from now on; each activation counts its turns from zero. `fault` fails
        the call it names (gymgate.faults) as often as it says."""
        with self._lock:
            if script is None:
                self._scripts.pop(env, None)
            else:
                self._activations += 1
                self._scripts[env] = (script, self._activations)
                if fault is not None:
                    self._faults[self._activations] = fault

    def route(
        self,
        rollouts: dict[str, tuple[str, Script]],
        expected: dict[str, dict[str, list[str]]] | None = None,
        latency: LatencyModel | None = None,
    ) -> None:
        """Answer the rollouts of a load run, all in flight at once: each tag (ROLLOUT_TAG in its row's metadata) with
        its environment's name and its own script, counting its turns from zero. `expected`: per tag and kind of
        untagged request (a judge's, a /tokenize: UNTAGGED), those its path made alone, in order (`request_key` of
        each): such a request, which carries no tag, goes to the rollout whose next one it exactly is. `latency`:
        each answered policy or judge call of these rollouts is delivered after the model's wait (asleep: the
        endpoint spends no CPU on it)."""
        with self._lock:
            for tag, (env, script) in rollouts.items():
                self._activations += 1
                self._routes[tag] = (env, script, self._activations)
                self._forget(tag)
                self._expected[tag] = {k: list(v) for k, v in (expected or {}).get(tag, {}).items()}
                if latency is not None and not latency.instant:
                    self._latency[tag] = latency

    def unroute(self, tags: Sequence[str]) -> None:
        with self._lock:
            for tag in tags:
                self._routes.pop(tag, None)
                self._forget(tag)

    def _forget(self, tag: str) -> None:
        """What routing knew of a rollout's untagged requests (called with the lock held)."""
        self._expected.pop(tag, None)
        self._last_tokenized.pop(tag, None)
        self._latency.pop(tag, None)
        for kind in UNTAGGED:
            self._claimed.pop((tag, kind), None)

    def take(self, rollouts: set[str] | None = None) -> list[Exchange]:
        """The exchanges recorded for these rollouts (None: all), removed: a load run keeps what it needs of each
        batch and no more (batches of several environments may be in flight at once)."""
        with self._lock:
            taken = [e for e in self.exchanges if rollouts is None or e.rollout in rollouts]
            if taken:
                kept = set(map(id, taken))
                self.exchanges[:] = [e for e in self.exchanges if id(e) not in kept]
        return taken

    def base_url(self, env: str | Sequence[str]) -> str:
        """The policy URL Gym is given for one environment, or for a Gym instance several environments share
        (services/sharing.py): their requests come through one model server, so each is the environment whose script
        is active (a worker runs one path at a time); none or several active is a refused request."""
        if isinstance(env, str) or len(env) == 1:
            name = env if isinstance(env, str) else env[0]
        else:
            name = "+".join(env)
            with self._lock:
                self._shared[name] = tuple(env)
        return f"http://127.0.0.1:{self.port}/e/{name}/v1"

    def _members(self, name: str) -> tuple[str, ...]:
        return self._shared.get(name) or (name,)

    def _active(self, name: str) -> str:
        """The environment a request to `name`'s URL is for (call with the lock held)."""
        members = self._shared.get(name)
        if members is None:
            return name
        active = [m for m in members if m in self._scripts]
        if len(active) > 1:
            raise Rejected(
                f"gymgate endpoint: scripts of {', '.join(active)} are active at once in one Gym instance", HARNESS
            )
        return active[0] if active else name

    # ----- serving -----
    def app(self):
        from starlette.applications import Starlette  # noqa: PLC0415 - pin environment only
        from starlette.responses import JSONResponse  # noqa: PLC0415 - pin environment only
        from starlette.routing import Route  # noqa: PLC0415 - pin environment only

        async def chat(request):
            return await self._handle(request, "chat", self._chat)

        async def tokenize(request):
            return await self._handle(request, "tokenize", self._tokenize)

        async def models(request):
            env = request.path_params["env"]
            return JSONResponse({"object": "list", "data": [{"id": POLICY_MODEL, "object": "model", "env": env}]})

        async def fallback(request):
            return await self._handle(request, "unknown", None)

        return Starlette(
            routes=[
                Route("/e/{env}/v1/chat/completions", chat, methods=["POST"]),
                Route("/e/{env}/tokenize", tokenize, methods=["POST"]),
                Route("/e/{env}/v1/models", models, methods=["GET"]),
                Route("/{rest:path}", fallback, methods=["GET", "POST", "PUT", "DELETE"]),
            ]
        )

    async def _handle(self, request, route: str, fn):
        from starlette.responses import JSONResponse  # noqa: PLC0415 - pin environment only

        env = request.path_params.get("env", "")
        try:
            body = await request.json() if request.method == "POST" else {}
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = {}
        exchange = Exchange(env=env, route=route, body=body)
        try:
            if route == "unknown":
                raise Rejected(f"gymgate endpoint: unexpected route {request.method} {request.url.path}")
            routed = self._routed(env, route, body, exchange)
            if routed is not None:
                script = routed
            else:
                with self._lock:
                    env = exchange.env = self._active(env)
                    script, exchange.activation = self._scripts.get(env, (None, 0))
            if script is None:
                raise Rejected(f"gymgate endpoint: no script is active for environment {env!r}")
            exchange.path_id = script.path_id
            saturated = self._saturated(exchange, route, script, body)
            if saturated is not None:
                return saturated
            if self._saturation is not None and exchange.rollout and route == "chat":
                await self._slowly(*self._saturation)
            fault = self._faults.get(exchange.activation)
            if fault is not None and route == "chat" and self._fails_now(fault, script, body, exchange):
                if fault.kind == injected_faults.SLOW:  # answered, late: the attempt counts as answered
                    await asyncio.sleep(fault.delay_s or 0.0)
                else:
                    exchange.injected, exchange.status = fault.name, injected_faults.status_of(fault)
                    self._record(exchange)
                    if fault.kind == injected_faults.STALL:
                        await self._hold(request, exchange.activation)
                    client = tuple(request.scope["client"] or ())
                    return injected_faults.response(fault, self._connections.get(client))
            reply = fn(script, body, exchange)
        except Rejected as exc:
            exchange.status, exchange.violation, exchange.blame = 400, exc.message, exc.blame
            reply = {"error": {"message": exc.message, "type": "invalid_request_error", "code": 400}}
        except Exception as exc:  # never a 5xx: Gym would retry it without end
            exchange.status, exchange.violation = 400, f"gymgate endpoint error: {type(exc).__name__}: {exc}"
            exchange.blame = HARNESS
            reply = {"error": {"message": exchange.violation, "type": "invalid_request_error", "code": 400}}
        exchange.reply = reply
        self._record(exchange)  # before the wait: a concurrent call of the same rollout counts this one's turn
        wait = self._model_wait(exchange)
        if wait > 0:
            await asyncio.sleep(wait)
        return JSONResponse(reply, status_code=exchange.status)

    def _model_wait(self, exchange: Exchange) -> float:
        """How long the model takes to deliver this answer (`route`'s latency; 0 for anything else)."""
        model = self._latency.get(exchange.rollout) if exchange.rollout else None
        if model is None or exchange.status != 200 or exchange.route != "chat" or not exchange.reply:
            return 0.0
        tokens = int((exchange.reply.get("usage") or {}).get("completion_tokens") or 0)
        exchange.waited_s = model.delay_s(call_key(exchange.rollout, exchange.kind, exchange.turn or 0), tokens)
        return exchange.waited_s

    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)
            if exchange.status == 200 and not exchange.injected and exchange.kind:
                key = (exchange.activation, exchange.kind)
                self._answered[key] = self._answered.get(key, 0) + 1

    def _routed(self, name: str, route: str, body: dict, exchange: Exchange) -> Script | None:
        """The script of the load run's rollout a request belongs to (None when no rollout of this URL's environments
        is routed: the active script answers). Its tag names it; an untagged chat request is a judge's, for the
        rollout whose answer it carries; a /tokenize request to the rollout that made exactly it alone next (or, for
        a retry, last: `_tokenized_rollout`). Anything else is refused: a load run never guesses which rollout a model
        call serves."""
        tag = body.get("metadata", {}).get(ROLLOUT_TAG) if isinstance(body.get("metadata"), dict) else None
        with self._lock:
            if not self._routes:
                return None
            members = self._members(name)
            candidates = {t: r for t, r in self._routes.items() if r[0] in members}
            if not candidates:
                return None
            if tag is not None:
                if tag not in candidates:
                    raise Rejected(f"gymgate endpoint: no rollout {tag!r} is in flight for {name!r}", HARNESS)
                chosen = tag
            elif route == "chat":
                chosen = self._judged_rollout(candidates, body)
                self._claimed[(chosen, JUDGE)] = self._claimed.get((chosen, JUDGE), 0) + 1
            else:
                key = request_key(TOKENIZE, body)
                chosen = self._next_of(TOKENIZE, candidates, key)
                if chosen is not None:  # its expected next: the next one it will ask is the one after
                    self._claimed[(chosen, TOKENIZE)] = self._claimed.get((chosen, TOKENIZE), 0) + 1
                else:
                    chosen = self._tokenized_rollout(candidates, key)
                self._last_tokenized[chosen] = key
            env, script, exchange.activation = candidates[chosen]
        exchange.env, exchange.rollout = env, chosen
        return script

    def _judged_rollout(self, candidates: dict[str, tuple[str, Script, int]], body: dict) -> str:
        """The rollout an untagged chat request judges: among those whose script makes it a judge's request, the first
        (by activation) whose next judge request alone was exactly this one; else the ones whose answers it quotes,
        and of those the one with the fewest judge calls answered (rollouts of one row answer alike). Called with the
        lock held."""
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        judging = {t: r for t, r in candidates.items() if messages and self.classify(r[1], messages) == JUDGE}
        if not judging:
            raise Rejected("gymgate endpoint: a policy request without its rollout's tag in a load run", HARNESS)
        exact = self._next_of(JUDGE, judging, request_key(JUDGE, body))
        if exact is not None:
            return exact
        text = "\n".join(content_text(m.get("content")) for m in messages)
        quoting = {
            t: r for t, r in judging.items() if any(turn.content and turn.content in text for turn in r[1].turns)
        }
        pool = quoting or judging
        return min(pool, key=lambda t: (self._claimed.get((t, JUDGE), 0), pool[t][2]))

    def _tokenized_rollout(self, candidates: dict[str, tuple[str, Script, int]], key: str) -> str:
        """The rollout an untagged /tokenize serves that no rollout makes next (by activation among equals: the
        rollouts of one GRPO group ask alike): one whose last was exactly it (Gym tokenizes again when it retries a
        call a saturated server failed); else one that made it alone at all; else the oldest in flight (a request no
        path made alone: the observation shows it). Called with the lock held."""
        again = [t for t in candidates if self._last_tokenized.get(t) == key]
        ever = [t for t in candidates if key in self._expected.get(t, {}).get(TOKENIZE, [])]
        return min(again or ever or candidates, key=lambda t: candidates[t][2])

    def _next_of(self, kind: str, candidates: dict[str, tuple[str, Script, int]], key: str) -> str | None:
        """The first rollout (by activation) whose next untagged request of `kind`, alone, was exactly `key`. Called
        with the lock held."""

        def expects(tag: str) -> bool:
            done, expected = self._claimed.get((tag, kind), 0), self._expected.get(tag, {}).get(kind, [])
            return done < len(expected) and expected[done] == key

        exact = [t for t in candidates if expects(t)]
        return min(exact, key=lambda t: candidates[t][2]) if exact else None

    def saturate(self, saturation: Saturation | None, until: float = 0.0) -> None:
        """Until `until` (time.monotonic), the policy server is saturated for the load run's rollouts (gymgate.load
        sweep.toml [[saturation]]: endpoint/faults.Saturation); None: it is not. Only routed rollouts' calls are
        touched: an acceptance path never sees it."""
        self._saturation = None if saturation is None else (saturation, until)

    def _saturated(self, exchange: Exchange, route: str, script: Script, body: dict):
        """The response failing this attempt when the server is saturated with an error status, else None."""
        if self._saturation is None or not exchange.rollout or route != "chat":
            return None
        saturation, until = self._saturation
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        if saturation.kind not in injected_faults.STATUS or time.monotonic() >= until or not messages:
            return None
        caller = self.classify(script, messages)
        if caller not in saturation.callers:
            return None
        exchange.kind, exchange.injected = caller, saturation.name
        exchange.status = injected_faults.STATUS[saturation.kind]
        self._record(exchange)
        return injected_faults.response(saturation)

    async def _slowly(self, saturation: Saturation, until: float) -> None:
        """A slow server: each answer while saturated waits `delay_s` first (the event loop keeps serving)."""
        if saturation.delay_s and time.monotonic() < until:
            await asyncio.sleep(saturation.delay_s)

    def _fails_now(self, fault: injected_faults.FaultPlan, script: Script, body: dict, exchange: Exchange) -> bool:
        """Whether this request is an attempt of the faulted call that the fault fails."""
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return False
        kind = self.classify(script, messages)
        turn = self._turn(exchange.activation, kind)
        if (kind, turn) != (fault.caller, fault.call):
            return False
        exchange.kind, exchange.turn = kind, turn
        attempt = sum(
            1 for e in self.exchanges if e.activation == exchange.activation and (e.kind, e.turn) == (kind, turn)
        )
        return fault.fails(attempt)

    async def _hold(self, request, activation: int) -> None:
        """A stalled attempt: no answer while its path runs (bounded), unless Gym gives up on it first."""
        deadline = time.monotonic() + injected_faults.STALL_CAP_S
        while time.monotonic() < deadline and self._running(activation):
            if await request.is_disconnected():
                return
            await asyncio.sleep(0.2)

    def _running(self, activation: int) -> bool:
        with self._lock:
            return any(active == activation for _, active in self._scripts.values())

    def _turn(self, activation: int, kind: str) -> int:
        """The caller's calls answered so far in this activation (the row's own history may already hold assistant
        messages, and an injected fault's attempt answered nothing)."""
        with self._lock:
            return self._answered.get((activation, kind), 0)

    # ----- the contract -----
    def classify(self, script: Script, messages: list[dict]) -> str:
        if script.judge_markers:
            for message in messages:
                text = content_text(message.get("content"))
                if all(marker in text for marker in script.judge_markers):
                    return JUDGE
        if script.opening:  # a judge whose template changed since its recording no longer carries the marker
            opening = script.opening.strip()
            if not any(content_text(m.get("content")).strip() == opening for m in messages if m.get("role") == "user"):
                return JUDGE
        return POLICY

    def prompt_ids(self, messages: list[dict], tools: list[dict] | None) -> list[int]:
        """Prompt tokens with the vLLM server's prefix splice: the model's own previous tokens are kept. Remembered
        by the exact request (PROMPTS_KEPT of them): a GRPO group's rollouts send the same prompts, and rendering the
        template twice a request was the endpoint's largest cost under load (docs/benchmarks.md, "Under load")."""
        key = json.dumps([messages, tools], default=str)  # key order kept: the template renders it as it comes
        with self._lock:
            known = self._prompts.get(key)
        if known is not None:
            return list(known)
        ids = self._prompt_ids(messages, tools)
        with self._lock:
            if len(self._prompts) >= PROMPTS_KEPT:
                self._prompts.pop(next(iter(self._prompts)))
            self._prompts[key] = tuple(ids)
        return ids

    def _prompt_ids(self, messages: list[dict], tools: list[dict] | None) -> list[int]:
        full = encode(self.tokenizer, render(self.tokenizer, messages, tools, generation_prompt=True))
        last = max((i for i, m in enumerate(messages) if m.get("prompt_token_ids")), default=None)
        if last is None:
            return full
        carried = messages[last]
        prefix = [int(t) for t in carried["prompt_token_ids"]] + [
            int(t) for t in carried.get("generation_token_ids") or []
        ]
        if prefix and prefix[-1] == self.eos_id:
            prefix = prefix[:-1]
        shorter = encode(self.tokenizer, render(self.tokenizer, messages[: last + 1], tools, generation_prompt=False))
        nth = shorter.count(self.eos_id)
        positions = [i for i, t in enumerate(full) if t == self.eos_id]
        if len(positions) < nth:
            raise Rejected(f"gymgate endpoint: prefix splice found {len(positions)} end-of-message tokens, needs {nth}")
        return prefix + full[positions[nth - 1] :]

    def _chat(self, script: Script, body: dict, exchange: Exchange) -> dict:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Rejected("gymgate endpoint: chat request without messages")
        if body.get("n", 1) != 1:
            raise Rejected(f"gymgate endpoint: n must be 1, got {body.get('n')}", CONTRACT)
        kind = self.classify(script, messages)
        exchange.kind = kind
        turn = self._turn(exchange.activation, kind)
        if kind == POLICY:
            self._guard_sampling(body)
            if turn >= len(script.turns):
                raise Rejected(
                    f"gymgate endpoint: {UNSCRIPTED} {turn} for {script.path_id} (the script has {len(script.turns)})"
                )
            scripted = script.turns[turn]
        else:
            scripted = None
        exchange.turn = turn

        message: dict[str, Any] = {
            "role": "assistant",
            "content": scripted.content if scripted else script.judge_verdict(turn),
        }
        if scripted and scripted.reasoning:
            message["reasoning_content"] = scripted.reasoning
        if scripted and scripted.tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{turn}_{i}", "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for i, c in enumerate(scripted.tool_calls)
            ]
        prompt = self.prompt_ids(messages, body.get("tools"))
        if len(prompt) >= MAX_LENGTH:
            raise Rejected(f"This model's maximum context length is {MAX_LENGTH} tokens; the prompt has {len(prompt)}")
        generation = encode(self.tokenizer, assistant_body(self.tokenizer, message)) + [self.eos_id]
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        if limit is not None and len(generation) > int(limit) and not script.recorded:
            raise Rejected(
                f"gymgate endpoint: scripted reply needs {len(generation)} tokens but max_tokens is {limit}", CONTRACT
            )
        lps = logprobs(script, kind, turn, len(generation))
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish, "message": dict(message)}
        if not message.get("content"):
            choice["message"]["content"] = None
        if body.get("logprobs"):
            choice["logprobs"] = {
                "content": [
                    {"token": f"token_id:{t}", "logprob": lp, "bytes": None, "top_logprobs": []}
                    for t, lp in zip(generation, lps, strict=True)
                ]
            }
            if body.get("return_tokens_as_token_ids"):
                choice["message"].update(
                    prompt_token_ids=prompt, generation_token_ids=generation, generation_log_probs=lps
                )
        return {
            "id": f"chatcmpl-gymgate-{exchange.rollout}-{kind}-{turn}"
            if exchange.rollout
            else f"chatcmpl-gymgate-{len(self.exchanges)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", POLICY_MODEL),
            "choices": [choice],
            "usage": {
                "prompt_tokens": len(prompt),
                "completion_tokens": len(generation),
                "total_tokens": len(prompt) + len(generation),
            },
        }

    def _guard_sampling(self, body: dict) -> None:
        if body.get("top_k") not in (None, -1):
            raise Rejected(
                f"gymgate endpoint: sampling guard: top_k must be unset or -1, got {body.get('top_k')}", CONTRACT
            )
        got = (body.get("temperature"), body.get("top_p"))
        want = (self.sampling.temperature, self.sampling.top_p)
        if got != want:
            raise Rejected(
                f"gymgate endpoint: sampling guard: policy request has temperature={got[0]}, top_p={got[1]}; "
                f"the RL overrides are temperature={want[0]}, top_p={want[1]}",
                CONTRACT,
            )

    def _tokenize(self, script: Script, body: dict, exchange: Exchange) -> dict:
        exchange.kind = TOKENIZE
        if "messages" in body:
            tokens = self.prompt_ids(body["messages"], body.get("tools"))
        elif "prompt" in body:
            tokens = encode(self.tokenizer, body["prompt"])
        else:
            raise Rejected("gymgate endpoint: /tokenize needs messages or prompt")
        return {"tokens": tokens, "count": len(tokens), "max_model_len": MAX_LENGTH}

    # ----- lifecycle -----
    def start(self) -> str:
        import uvicorn  # noqa: PLC0415 - pin environment only

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app(), log_level="warning", lifespan="off", access_log=False)
        config.load()
        config.http_protocol_class = _tracking(config.http_protocol_class, self._connections)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._server.serve(sockets=[sock])), name="gymgate-endpoint", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("gymgate endpoint did not start")
            time.sleep(0.01)
        return f"http://127.0.0.1:{self.port}"

    def cpu_seconds(self) -> float:
        """CPU the endpoint's thread has spent so far, serving included (a load run reports the endpoint's share)."""
        if self._thread is None or self._thread.ident is None:
            return 0.0
        return time.clock_gettime(time.pthread_getcpuclockid(self._thread.ident))

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> ModelEndpoint:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def request_key(kind: str, body: dict) -> str:
    """An untagged request as the endpoint tells one from another: what it asks, exactly (a judge's messages; a
    /tokenize's messages or prompt, and tools)."""
    if kind == JUDGE:
        return json.dumps(body.get("messages") or [], default=str)
    return json.dumps({k: body[k] for k in ("messages", "prompt", "tools") if k in body}, default=str)


def _tracking(protocol: type, connections: dict[tuple, asyncio.Transport]) -> type:
    """The server's own HTTP protocol, keeping each open connection by its client's address: the app reaches the
    connection of a request only through it (a reset fault drops that connection)."""

    class Tracking(protocol):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._gymgate_peer = tuple(transport.get_extra_info("peername") or ())
            connections[self._gymgate_peer] = transport

        def connection_lost(self, exc) -> None:
            connections.pop(getattr(self, "_gymgate_peer", ()), None)
            super().connection_lost(exc)

    return Tracking
