"""How the endpoint fails a call when a path's fault says so (gymgate.faults declares which call, how, how often):
each kind is what a real model server or the proxy in front of it sends."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import asyncio

HTTP_500, HTTP_503, NOT_SCHEMA, CUT_BODY = "http_500", "http_503", "not_schema", "cut_body"
RESET, STALL = "reset", "stall"
HTTP_429 = "http_429"  # too many requests: a saturated server's (load runs' saturation, gymgate.load)
HTTP_502, HTTP_504 = "http_502", "http_504"  # a proxy's: the server behind it went away, or took too long
SLOW = "slow"  # the answer, late: not a failure, a wait (the attempt is answered)
KINDS = (HTTP_500, HTTP_502, HTTP_503, HTTP_504, HTTP_429, NOT_SCHEMA, CUT_BODY, RESET, STALL, SLOW)
STATUS = {HTTP_500: 500, HTTP_502: 502, HTTP_503: 503, HTTP_504: 504, HTTP_429: 429}  # the error-status kinds
INJECTED = "gymgate injected fault"  # in every error the endpoint injects: Gym must never pass it on to a model
NO_ANSWER = (RESET, STALL)  # kinds that send no status at all: the attempt is recorded with status 0
STALL_CAP_S = 600.0  # a stalled attempt is held while its path runs, never longer than this


class FaultPlan(Protocol):
    """What the endpoint reads of a fault (gymgate.faults.catalogue.Fault)."""

    name: str
    caller: str
    call: int
    kind: str
    retry_after: int | None
    delay_s: float | None

    def fails(self, attempt: int) -> bool: ...


@dataclass(frozen=True)
class Saturation:
    """One way the policy server is saturated during a load run (gymgate/load/sweep.toml [[saturation]]): every attempt
    of a policy call fails with `kind` (an error status above, with Retry-After when `retry_after` is set), or every
    answer comes `delay_s` late, for `window_s` from a batch's start."""

    name: str
    window_s: float
    why: str
    kind: str = ""  # an error status kind of endpoint/faults.py; "" with delay_s: a slow server
    retry_after: int | None = None
    delay_s: float = 0.0
    callers: tuple[str, ...] = ("policy",)  # whose calls fail: the policy's, and a judge's when "judge" is named


def error_body(kind: str) -> dict[str, Any]:
    status = STATUS.get(kind, 500)
    text = {
        503: "the model server is overloaded",
        429: "too many requests, slow down",
        502: "bad gateway",
        504: "gateway timeout",
    }.get(status, "internal server error")
    return {"error": {"message": f"{INJECTED}: {text}", "type": "server_error", "code": status}}


def response(fault: FaultPlan, connection: asyncio.Transport | None = None):
    """The ASGI response that fails one attempt of the call (`connection`: the attempt's own, for a reset)."""
    from starlette.responses import JSONResponse, Response  # noqa: PLC0415 - pin environment only

    if fault.kind in STATUS:
        headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else None
        return JSONResponse(error_body(fault.kind), status_code=STATUS[fault.kind], headers=headers)
    if fault.kind == NOT_SCHEMA:  # valid JSON, not a chat completion: no choices
        body = {"object": "error", "message": f"{INJECTED}: model is loading"}
        return Response(json.dumps(body), media_type="application/json")
    if fault.kind == CUT_BODY:
        return CutBody()
    if fault.kind in NO_ANSWER:
        return Reset(connection)
    raise ValueError(f"unknown fault kind {fault.kind!r}")


def status_of(fault: FaultPlan) -> int:
    """The HTTP status the attempt is recorded with (a cut body started as a 200; a reset or a stall sends none)."""
    return {**STATUS, RESET: 0, STALL: 0}.get(fault.kind, 200)


class Reset:
    """Drops the connection with a TCP reset before any answer: what the client of a server killed mid-call sees.
    Gym's HTTP client (aiohttp) raises ClientOSError for it, the class a refused connection raises
    (ClientConnectorError is a ClientOSError): the endpoint, one port for every Gym instance, cannot refuse one
    instance's connections, and no release's client tells the two apart (docs/architecture.md, "Fault paths")."""

    def __init__(self, connection: asyncio.Transport | None):
        self.connection = connection  # None: the client has gone already (it gave up on a stalled attempt)

    async def __call__(self, scope, receive, send) -> None:
        if self.connection is not None:
            sock = self.connection.get_extra_info("socket")
            if sock is not None:  # linger 0: close sends RST, not FIN
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.abort()
        # Return only once the server has seen the connection go: it then sends nothing (no 500 of its own).
        async with asyncio.timeout(5):
            while (await receive())["type"] != "http.disconnect":
                pass


class CutBody:
    """Promises a body of some length, sends half of it, and ends the connection (uvicorn closes it when the app
    raises after the response started)."""

    body = json.dumps({"id": "chatcmpl-cut", "object": "chat.completion", "choices": [{"index": 0}]}).encode()

    async def __call__(self, scope, receive, send) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(self.body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self.body[: len(self.body) // 2], "more_body": True})
        raise ConnectionAbortedError(f"{INJECTED}: connection closed mid-body")
