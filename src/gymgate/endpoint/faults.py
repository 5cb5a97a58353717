"""How the endpoint fails a call when a path's fault says so (gymgate.faults declares which call, how, how often):
each kind is what a real model server or the proxy in front of it sends."""

from __future__ import annotations

import json
from typing import Any, Protocol

HTTP_500, HTTP_503, NOT_SCHEMA, CUT_BODY = "http_500", "http_503", "not_schema", "cut_body"
KINDS = (HTTP_500, HTTP_503, NOT_SCHEMA, CUT_BODY)


class FaultPlan(Protocol):
    """What the endpoint reads of a fault (gymgate.faults.spec.Fault)."""

    name: str
    caller: str
    call: int
    kind: str
    retry_after: int | None

    def fails(self, attempt: int) -> bool: ...


def error_body(kind: str) -> dict[str, Any]:
    status = 503 if kind == HTTP_503 else 500
    text = "the model server is overloaded" if status == 503 else "internal server error"
    return {"error": {"message": f"gymgate injected fault: {text}", "type": "server_error", "code": status}}


def response(fault: FaultPlan):
    """The ASGI response that fails one attempt of the call."""
    from starlette.responses import JSONResponse, Response

    if fault.kind in (HTTP_500, HTTP_503):
        headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else None
        return JSONResponse(error_body(fault.kind), status_code=503 if fault.kind == HTTP_503 else 500, headers=headers)
    if fault.kind == NOT_SCHEMA:  # valid JSON, not a chat completion: no choices
        return Response(json.dumps({"object": "error", "message": "model is loading"}), media_type="application/json")
    if fault.kind == CUT_BODY:
        return CutBody()
    raise ValueError(f"unknown fault kind {fault.kind!r}")


def status_of(fault: FaultPlan) -> int:
    """The HTTP status the attempt is recorded with (a cut body started as a 200)."""
    return {HTTP_500: 500, HTTP_503: 503}.get(fault.kind, 200)


class CutBody:
    """Promises a body of some length, sends half of it, and ends the connection (uvicorn closes it when the app
    raises after the response started)."""

    body = json.dumps({"id": "chatcmpl-cut", "object": "chat.completion", "choices": [{"index": 0}]}).encode()

    async def __call__(self, scope, receive, send) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(self.body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self.body[: len(self.body) // 2], "more_body": True})
        raise ConnectionAbortedError("gymgate injected fault: connection closed mid-body")
