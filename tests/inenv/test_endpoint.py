"""The deterministic endpoint over real loopback HTTP: contract, splice, guard, and never a 5xx of its own; a
path's fault fails exactly the call it names, as often as it says, the way real servers fail."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request

import pytest

from gymgate.endpoint.script import Script, ToolCall, Turn, logprobs
from gymgate.endpoint.server import ModelEndpoint, Sampling
from gymgate.endpoint.tokenizer import assistant_body, encode, render
from gymgate.faults.catalogue import Fault

SAMPLING = Sampling(temperature=0.7, top_p=0.95)
SCRIPT = Script(
    "demo",
    "accepted",
    (Turn(content="first", reasoning="think", tool_calls=(ToolCall("f", '{"x": 1}'),)), Turn(content="done")),
    judge_markers=("GOLD:", "CANDIDATE:"),
    judge_verdicts=("[[A=B]]",),
)
USER = [{"role": "user", "content": "question"}]


@pytest.fixture
def endpoint():
    ep = ModelEndpoint(SAMPLING)
    began = time.monotonic()
    ep.start()
    assert time.monotonic() - began < 1.0  # starts well under a second
    ep.set_script("demo", SCRIPT)
    yield ep
    ep.stop()


def post(ep, path, body):
    request = urllib.request.Request(
        f"http://127.0.0.1:{ep.port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def chat(ep, messages, **extra):
    body = {
        "model": "m",
        "messages": messages,
        "temperature": 0.7,
        "top_p": 0.95,
        "logprobs": True,
        "top_logprobs": 0,
        "return_tokens_as_token_ids": True,
        **extra,
    }
    return post(ep, "/e/demo/v1/chat/completions", body)


def test_policy_reply_carries_exact_tokens_and_logprobs(endpoint):
    tok = endpoint.tokenizer
    status, reply = chat(endpoint, USER)
    assert status == 200
    message = reply["choices"][0]["message"]
    assert reply["choices"][0]["finish_reason"] == "tool_calls"
    assert message["reasoning_content"] == "think" and message["tool_calls"][0]["function"]["name"] == "f"
    assert message["prompt_token_ids"] == encode(tok, render(tok, USER))
    body = assistant_body(
        tok,
        {"role": "assistant", "content": "first", "reasoning_content": "think", "tool_calls": message["tool_calls"]},
    )
    assert message["generation_token_ids"] == encode(tok, body) + [tok.eos_token_id]
    assert message["generation_log_probs"] == logprobs(SCRIPT, "policy", 0, len(message["generation_token_ids"]))
    content = reply["choices"][0]["logprobs"]["content"]
    assert [c["token"] for c in content] == [f"token_id:{t}" for t in message["generation_token_ids"]]
    assert [c["logprob"] for c in content] == message["generation_log_probs"]
    status, tokenized = post(endpoint, "/e/demo/tokenize", {"model": "m", "messages": USER})
    assert status == 200 and tokenized["tokens"] == message["prompt_token_ids"]


def test_second_turn_splices_the_models_own_tokens(endpoint):
    _, first = chat(endpoint, USER)
    m1 = first["choices"][0]["message"]
    echoed = {**m1, "role": "assistant"}
    history = USER + [echoed, {"role": "tool", "tool_call_id": "call_0_0", "content": "OUT"}]
    _, second = chat(endpoint, history)
    m2 = second["choices"][0]["message"]
    assert m2["content"] == "done"
    assert m2["prompt_token_ids"][: len(m1["prompt_token_ids"]) + len(m1["generation_token_ids"])] == (
        m1["prompt_token_ids"] + m1["generation_token_ids"]
    )


def test_history_without_its_token_ids_and_reasoning_breaks_continuity(endpoint):
    _, first = chat(endpoint, USER)
    m1 = first["choices"][0]["message"]
    stripped = {"role": "assistant", "content": m1["content"], "tool_calls": m1["tool_calls"]}  # reasoning lost
    _, second = chat(endpoint, USER + [stripped, {"role": "tool", "tool_call_id": "call_0_0", "content": "OUT"}])
    prompt = second["choices"][0]["message"]["prompt_token_ids"]
    seen = m1["prompt_token_ids"] + m1["generation_token_ids"]
    assert prompt[: len(seen)] != seen


def test_sampling_guard_rejects_policy_requests_without_the_overrides(endpoint):
    status, reply = chat(endpoint, USER, temperature=1.0)
    assert status == 400 and "sampling guard" in reply["error"]["message"]
    status, reply = chat(endpoint, USER, top_k=5)
    assert status == 400 and "top_k" in reply["error"]["message"]
    assert [e.status for e in endpoint.exchanges] == [400, 400]
    assert all("sampling guard" in e.violation for e in endpoint.exchanges)


def test_judge_requests_are_told_apart_and_exempt_from_the_guard(endpoint):
    judge = [{"role": "user", "content": "QUESTION:\nq\n\nGOLD:\ndarwin\n\nCANDIDATE:\nDarwin"}]
    status, reply = post(endpoint, "/e/demo/v1/chat/completions", {"model": "m", "messages": judge})
    assert status == 200 and reply["choices"][0]["message"]["content"] == "[[A=B]]"
    assert endpoint.exchanges[-1].kind == "judge"


def test_unscripted_and_unknown_requests_get_400_never_5xx(endpoint, monkeypatch):
    _, first = chat(endpoint, USER)
    chat(endpoint, USER)  # the second scripted turn
    status, reply = chat(endpoint, USER)
    assert status == 400 and "unscripted policy turn 2" in reply["error"]["message"]
    status, reply = post(endpoint, "/e/other/v1/chat/completions", {"messages": USER})
    assert status == 400 and "no script is active for environment 'other'" in reply["error"]["message"]
    status, reply = post(endpoint, "/v1/embeddings", {})
    assert status == 400 and "unexpected route" in reply["error"]["message"]
    monkeypatch.setattr(endpoint, "_chat", lambda *a: 1 / 0)
    status, reply = chat(endpoint, USER)
    assert status == 400 and "ZeroDivisionError" in reply["error"]["message"]


def test_context_overflow_is_a_400_gym_ends_gracefully_on(endpoint):
    status, reply = chat(endpoint, [{"role": "user", "content": "x" * 131_072}])
    assert status == 400 and "maximum context length" in reply["error"]["message"]


def test_models_route_answers(endpoint):
    with urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/e/demo/v1/models", timeout=5) as response:
        assert response.status == 200 and json.load(response)["data"][0]["id"] == "gymgate-policy"


def test_a_new_activation_restarts_turn_counting(endpoint):
    chat(endpoint, USER)
    endpoint.set_script("demo", SCRIPT)
    _, reply = chat(endpoint, USER)
    assert reply["choices"][0]["message"]["content"] == "first"


def test_a_shared_instance_url_answers_for_whichever_member_is_active(endpoint):
    """Environments sharing one Gym instance share its model server, so one URL: each request is the active
    member's (a worker runs one path at a time); none active, or two at once, is refused."""
    url = endpoint.base_url(["demo", "other"])
    assert url.endswith("/e/demo+other/v1") and endpoint.base_url(["demo"]).endswith("/e/demo/v1")
    status, _ = post(endpoint, "/e/demo+other/v1/chat/completions", {**_policy_body(), "messages": USER})
    assert status == 200 and endpoint.exchanges[-1].env == "demo" and endpoint.exchanges[-1].path_id == "demo:accepted"
    endpoint.set_script("other", SCRIPT)
    status, reply = post(endpoint, "/e/demo+other/v1/chat/completions", {**_policy_body(), "messages": USER})
    assert status == 400 and "active at once" in reply["error"]["message"]
    assert endpoint.exchanges[-1].blame == "harness"
    endpoint.set_script("demo", None)
    endpoint.set_script("other", None)
    status, reply = post(endpoint, "/e/demo+other/v1/chat/completions", {**_policy_body(), "messages": USER})
    assert status == 400 and "no script is active for environment 'demo+other'" in reply["error"]["message"]


def _policy_body() -> dict:
    return {
        "model": "m",
        "temperature": 0.7,
        "top_p": 0.95,
        "logprobs": True,
        "top_logprobs": 0,
        "return_tokens_as_token_ids": True,
    }


# ----- faults (gymgate.faults) -----
JUDGE_TURN = [{"role": "user", "content": "GOLD: 1 CANDIDATE: 1"}]


def faulted(ep, fault: Fault) -> None:
    ep.set_script("demo", SCRIPT, fault)


def test_a_transient_500_fails_the_first_attempt_then_the_call_is_answered(endpoint):
    faulted(endpoint, Fault("once", "policy", 0, "http_500", 1))
    status, body = chat(endpoint, USER)
    assert status == 500 and "injected fault" in body["error"]["message"]
    status, body = chat(endpoint, USER)
    assert status == 200 and body["choices"][0]["message"]["content"] == "first"
    status, body = chat(endpoint, USER)  # the second turn: not faulted
    assert status == 200 and body["choices"][0]["message"]["content"] == "done"
    assert [(e.kind, e.turn, e.status, e.injected) for e in endpoint.exchanges] == [
        ("policy", 0, 500, "once"),
        ("policy", 0, 200, ""),
        ("policy", 1, 200, ""),
    ]


def test_a_permanent_fault_fails_every_attempt_of_its_call_only(endpoint):
    faulted(endpoint, Fault("judge", "judge", 0, "http_503", "every", retry_after=2))
    assert chat(endpoint, USER)[0] == 200  # the policy's call is not the faulted one
    for _ in range(4):
        assert chat(endpoint, JUDGE_TURN)[0] == 503
    assert [e.injected for e in endpoint.exchanges] == ["", "judge", "judge", "judge", "judge"]


def test_a_later_turn_is_faulted_after_the_first_is_answered(endpoint):
    faulted(endpoint, Fault("second", "policy", 1, "http_500", 1))
    assert chat(endpoint, USER)[0] == 200
    assert chat(endpoint, USER)[0] == 500
    status, body = chat(endpoint, USER)
    assert status == 200 and body["choices"][0]["message"]["content"] == "done"


def _raw(ep, body: dict) -> tuple[int, bytes, str]:
    connection = http.client.HTTPConnection("127.0.0.1", ep.port, timeout=10)
    connection.request("POST", "/e/demo/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    try:
        return response.status, response.read(), response.getheader("Content-Length") or ""
    except http.client.IncompleteRead as exc:
        return response.status, exc.partial, "cut"
    finally:
        connection.close()


def test_a_200_that_is_not_a_completion_and_a_body_cut_short(endpoint):
    request = {"model": "m", "messages": USER, "temperature": 0.7, "top_p": 0.95}
    faulted(endpoint, Fault("schema", "policy", 0, "not_schema", 1))
    status, body, _ = _raw(endpoint, request)
    assert status == 200 and "choices" not in json.loads(body)
    faulted(endpoint, Fault("cut", "policy", 0, "cut_body", 1))
    status, body, how = _raw(endpoint, request)
    assert status == 200 and how == "cut" and body  # half a body, then the connection closed
    status, body, _ = _raw(endpoint, request)  # the next attempt is answered, as the first turn
    assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == "first"


def test_without_a_fault_nothing_fails(endpoint):
    assert chat(endpoint, USER)[0] == 200
    assert all(not e.injected for e in endpoint.exchanges)


@pytest.mark.parametrize("kind, status", [("http_502", 502), ("http_504", 504), ("http_429", 429)])
def test_a_proxys_status_fails_the_attempt_with_its_own_status(endpoint, kind, status):
    faulted(endpoint, Fault("proxy", "policy", 0, kind, 3, retry_after=1 if kind == "http_429" else None))
    for _ in range(3):
        got, body = chat(endpoint, USER)
        assert got == status and "injected fault" in body["error"]["message"]
    assert chat(endpoint, USER)[0] == 200  # a while: three attempts fail, the fourth is answered
    assert [e.status for e in endpoint.exchanges] == [status, status, status, 200]


def test_a_slow_answer_is_an_answer_late(endpoint):
    faulted(endpoint, Fault("slow", "policy", 0, "slow", 1, delay_s=1.5))
    began = time.monotonic()
    status, body = chat(endpoint, USER)
    assert status == 200 and body["choices"][0]["message"]["content"] == "first"
    assert time.monotonic() - began >= 1.5
    began = time.monotonic()
    assert chat(endpoint, USER)[0] == 200 and time.monotonic() - began < 1.0  # the next call: on time
    assert [(e.status, e.injected) for e in endpoint.exchanges] == [(200, ""), (200, "")]


@pytest.mark.parametrize("kind", ["http_500", "http_502", "http_503", "http_504", "not_schema", "cut_body"])
def test_every_declared_kind_has_a_response(kind):
    from gymgate.endpoint import faults

    assert faults.response(Fault("f", "policy", 0, kind, 1)) is not None


def _aiohttp_post(ep, timeout_s: float = 10) -> tuple[str, float]:
    """One chat request through Gym's own HTTP client library: what it raised (or the status), and how long."""
    import asyncio

    import aiohttp

    async def go() -> str:
        url = f"http://127.0.0.1:{ep.port}/e/demo/v1/chat/completions"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session:
            try:
                async with session.post(url, json={**_policy_body(), "messages": USER}) as response:
                    await response.read()
                    return str(response.status)
            except (aiohttp.ClientError, TimeoutError) as exc:
                return type(exc).__name__

    began = time.monotonic()
    return asyncio.run(go()), time.monotonic() - began


def test_a_reset_reaches_gyms_client_as_a_refused_connection_does(endpoint):
    import aiohttp

    faulted(endpoint, Fault("reset", "policy", 0, "reset", 1))
    raised, _ = _aiohttp_post(endpoint)
    assert raised == "ClientOSError" and issubclass(aiohttp.ClientConnectorError, aiohttp.ClientOSError)
    assert _aiohttp_post(endpoint)[0] == "200"  # the next attempt is answered
    assert [(e.status, e.injected) for e in endpoint.exchanges] == [(0, "reset"), (200, "")]


def test_a_stalled_call_is_held_until_the_client_gives_up_or_the_path_ends(endpoint):
    import threading

    faulted(endpoint, Fault("stall", "policy", 0, "stall", 1))
    raised, took = _aiohttp_post(endpoint, timeout_s=1.0)
    assert raised in ("ServerTimeoutError", "TimeoutError") and 0.9 < took < 3  # no answer: the client's own timeout
    assert _aiohttp_post(endpoint)[0] == "200"  # the retry is answered
    faulted(endpoint, Fault("stall", "policy", 0, "stall", "every"))
    threading.Timer(1.0, endpoint.set_script, ("demo", None)).start()  # the path ends: the held call is dropped
    raised, took = _aiohttp_post(endpoint, timeout_s=20)
    assert raised in ("ClientOSError", "ServerDisconnectedError") and took < 5
    assert [(e.status, e.injected) for e in endpoint.exchanges] == [(0, "stall"), (200, ""), (0, "stall")]


# ----- load runs: many rollouts in flight, each answered from its own script (gymgate.load) -----
OTHER = Script("demo", "rejected", (Turn(content="second answer"),), ("GOLD:", "CANDIDATE:"), ("[[A!=B]]",))


def tagged(tag: str, messages=USER) -> dict:
    return {**_policy_body(), "messages": messages, "metadata": {"gymgate_rollout": tag}}


def test_routed_rollouts_are_answered_from_their_own_scripts_and_turns(endpoint):
    endpoint.set_script("demo", None)
    endpoint.route({"a": ("demo", SCRIPT), "b": ("demo", SCRIPT), "c": ("demo", OTHER)})
    replies = {t: post(endpoint, "/e/demo/v1/chat/completions", tagged(t))[1] for t in ("a", "c", "b")}
    assert replies["a"]["choices"][0]["message"]["content"] == "first"
    assert replies["b"]["choices"][0]["message"]["content"] == "first"  # b's own first turn, not a's second
    assert replies["c"]["choices"][0]["message"]["content"] == "second answer"
    _, again = post(endpoint, "/e/demo/v1/chat/completions", tagged("a"))
    assert again["choices"][0]["message"]["content"] == "done"
    assert [e.rollout for e in endpoint.exchanges] == ["a", "c", "b", "a"]
    assert replies["a"]["id"] != replies["b"]["id"]  # each reply's id names its rollout, never a shared counter


def test_an_untagged_judge_request_goes_to_the_rollout_whose_answer_it_quotes(endpoint):
    endpoint.set_script("demo", None)
    endpoint.route({"a": ("demo", SCRIPT), "c": ("demo", OTHER)})
    judge = [{"role": "user", "content": "GOLD:\ndarwin\n\nCANDIDATE:\nsecond answer"}]
    status, reply = post(endpoint, "/e/demo/v1/chat/completions", {"model": "m", "messages": judge})
    assert status == 200 and reply["choices"][0]["message"]["content"] == "[[A!=B]]"
    assert endpoint.exchanges[-1].rollout == "c" and endpoint.exchanges[-1].kind == "judge"


def test_a_load_run_never_guesses_which_rollout_a_call_serves(endpoint):
    """An unknown tag, or a policy request without one while rollouts are in flight, is refused (gymgate's fault)."""
    endpoint.set_script("demo", None)
    endpoint.route({"a": ("demo", SCRIPT)})
    status, reply = post(endpoint, "/e/demo/v1/chat/completions", tagged("zzz"))
    assert status == 400 and "no rollout 'zzz'" in reply["error"]["message"]
    status, reply = post(endpoint, "/e/demo/v1/chat/completions", {**_policy_body(), "messages": USER})
    assert status == 400 and "without its rollout's tag" in reply["error"]["message"]
    assert {e.blame for e in endpoint.exchanges} == {"harness"}
    endpoint.unroute(["a"])
    assert len(endpoint.take()) == 2 and endpoint.exchanges == []
    assert endpoint.cpu_seconds() > 0


def test_a_saturated_server_fails_routed_policy_calls_until_its_window_ends(endpoint):
    """Load runs' saturation (gymgate.load): every attempt of a rollout's policy call fails while the window lasts (a
    failed attempt answers no turn); then the call is answered; a slow server answers late instead."""
    from gymgate.endpoint.faults import Saturation  # noqa: PLC0415 - this test only

    endpoint.set_script("demo", None)
    endpoint.route({"a": ("demo", SCRIPT)})
    endpoint.saturate(Saturation("sat", 0.5, "", "http_429", retry_after=1), until=time.monotonic() + 0.5)
    status, reply = post(endpoint, "/e/demo/v1/chat/completions", tagged("a"))
    assert status == 429 and "gymgate injected fault" in reply["error"]["message"]
    assert endpoint.exchanges[-1].injected == "sat" and endpoint.exchanges[-1].kind == "policy"
    time.sleep(0.6)
    status, reply = post(endpoint, "/e/demo/v1/chat/completions", tagged("a"))
    assert status == 200 and reply["choices"][0]["message"]["content"] == "first"
    endpoint.saturate(Saturation("slow", 5.0, "", delay_s=0.3), until=time.monotonic() + 5)
    began = time.monotonic()
    status, reply = post(endpoint, "/e/demo/v1/chat/completions", tagged("a"))
    assert status == 200 and reply["choices"][0]["message"]["content"] == "done" and time.monotonic() - began >= 0.3
    endpoint.saturate(None)
    endpoint.unroute(["a"])
    endpoint.set_script("demo", SCRIPT)
    status, _ = chat(endpoint, USER)  # an acceptance path never sees a saturation
    assert status == 200


def test_a_judge_request_goes_to_the_rollout_whose_next_one_it_is(endpoint):
    """Two rollouts of one path judged twice each (a judge asked both ways round): each request goes to the rollout
    that made exactly it, alone, next, whatever order they arrive in."""
    from gymgate.endpoint.server import JUDGE, request_key  # noqa: PLC0415 - this test only

    first = [{"role": "user", "content": "GOLD: a CANDIDATE: first"}]
    second = [{"role": "user", "content": "GOLD: first CANDIDATE: a"}]
    endpoint.set_script("demo", None)
    alone = {JUDGE: [request_key(JUDGE, {"messages": first}), request_key(JUDGE, {"messages": second})]}
    endpoint.route({"a": ("demo", SCRIPT), "b": ("demo", SCRIPT)}, {"a": alone, "b": alone})
    for messages in (first, second, first, second):  # by count alone, b would get a's second
        status, _ = post(endpoint, "/e/demo/v1/chat/completions", {"model": "m", "messages": messages})
        assert status == 200
    seen = {t: [e.body["messages"] for e in endpoint.exchanges if e.rollout == t] for t in ("a", "b")}
    assert seen == {"a": [first, second], "b": [first, second]}


def test_prompts_remembered_by_the_exact_request_key_order_included(endpoint):
    """A tool schema whose keys come in another order renders another prompt: never served from the other's."""
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    reordered = {"function": {"parameters": {"properties": {}, "type": "object"}, "name": "f"}, "type": "function"}
    one = endpoint.prompt_ids(USER, [tool])
    other = endpoint.prompt_ids(USER, [reordered])
    assert one == endpoint.prompt_ids(USER, [tool]) and one != other


def test_a_tokenize_request_goes_to_the_rollout_that_made_it_alone_next(endpoint):
    """Gym 0.2's model server asks /tokenize with a rollout's conversation, no tag: each goes to the rollout whose next
    /tokenize alone it exactly is (by count alone, one rollout would take the others'), even when the rollouts' own
    requests arrive out of order; one that no rollout made alone goes to the oldest (and differs there)."""
    from gymgate.endpoint.server import TOKENIZE, request_key  # noqa: PLC0415 - this test only

    one = {"model": "m", "messages": USER}
    two = {"model": "m", "messages": [*USER, {"role": "assistant", "content": "first"}]}
    endpoint.set_script("demo", None)
    alone = {TOKENIZE: [request_key(TOKENIZE, one), request_key(TOKENIZE, two)]}
    endpoint.route({"a": ("demo", SCRIPT), "b": ("demo", SCRIPT), "c": ("demo", OTHER)}, {"a": alone, "b": alone})
    for body in (one, one, two, two):
        status, reply = post(endpoint, "/e/demo/tokenize", body)
        assert status == 200 and reply["tokens"]
    seen = {t: [e.body["messages"] for e in endpoint.exchanges if e.rollout == t] for t in ("a", "b", "c")}
    assert seen == {"a": [one["messages"], two["messages"]], "b": [one["messages"], two["messages"]], "c": []}
    odd = {"model": "m", "prompt": "not any rollout's"}
    assert post(endpoint, "/e/demo/tokenize", odd)[0] == 200 and endpoint.exchanges[-1].rollout == "a"  # the oldest
    # A retry tokenizes again: it goes to the rollout whose last it was, never to another environment's rollout.
    endpoint.unroute(["a", "b", "c"])
    endpoint.take()
    other = {"model": "m", "messages": [{"role": "user", "content": "another environment's"}]}
    endpoint.route({"x": ("demo", OTHER), "a": ("demo", SCRIPT), "b": ("demo", SCRIPT)}, {"a": alone, "b": alone})
    for body in (one, one, one, two, one, two):  # b's own `one`, and a retry of it, after a has moved on
        assert post(endpoint, "/e/demo/tokenize", body)[0] == 200
    assert post(endpoint, "/e/demo/tokenize", other)[0] == 200
    seen = {t: [e.body["messages"] for e in endpoint.exchanges if e.rollout == t] for t in ("x", "a", "b")}
    assert seen["x"] == [other["messages"]]  # the oldest in flight gets only what no path made alone
    assert seen["a"] == [one["messages"], one["messages"], two["messages"]]
    assert seen["b"] == [one["messages"], one["messages"], two["messages"]]
