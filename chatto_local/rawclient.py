"""Minimal raw Chatto protocol clients (httpx + websockets, no project client modules).

Used by the local server's conformance suite (``tests/server/test_local_server*.py``) and handy
for acting as a person against any Chatto-compatible server from a script. They do no
retries, no classification and no error mapping: they show the wire as it is.

* :class:`RawRpc` — ``POST {base}/api/connect/{procedure}`` with JSON; returns
  ``(http_status, parsed_json_or_None, raw_bytes)``.
* :class:`RawRealtime` — one WebSocket at ``/api/realtime`` exchanging binary
  ``RealtimeClientFrame`` / ``RealtimeServerFrame`` protobufs (realtime protocol 2).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from types import EllipsisType
from typing import Any

import httpx
import websockets
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

from hermes_chatto.wire.proto import chatto_pb2 as pb


class RawRpc:
    """Synchronous ConnectRPC JSON caller. ``call(procedure, body, token=...)`` →
    ``(status, json | None, raw)``; ``procedure`` like ``"chatto.api.v1.ViewerService/GetViewer"``
    (a bare ``"Service/Method"`` gets the ``chatto.api.v1.`` package)."""

    def __init__(self, base_url: str, token: str | None = None, timeout: float = 10.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.http = httpx.Client(timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def url(self, procedure: str) -> str:
        if "." not in procedure.split("/")[0]:
            procedure = "chatto.api.v1." + procedure
        return f"{self.base_url}/api/connect/{procedure}"

    def call(
        self,
        procedure: str,
        body: Any = None,
        *,
        token: str | None | EllipsisType = ...,
        raw_body: bytes | None = None,
        content_type: str = "application/json",
        method: str = "POST",
    ) -> tuple[int, Any, bytes]:
        headers = {"Content-Type": content_type, "Connect-Protocol-Version": "1"}
        tok = self.token if isinstance(token, EllipsisType) else token
        if tok:
            headers["Authorization"] = f"Bearer {tok}"
        data = raw_body if raw_body is not None else json.dumps(body if body is not None else {}).encode()
        r = self.http.request(method, self.url(procedure), content=data, headers=headers)
        parsed = None
        if r.headers.get("content-type", "").startswith("application/json") and r.content:
            parsed = r.json()
        return r.status_code, parsed, r.content

    def ok(self, procedure: str, body: Any = None, **kw) -> dict:
        """``call`` that asserts HTTP 200 and returns the JSON body."""
        status, data, raw = self.call(procedure, body, **kw)
        if status != 200:
            raise AssertionError(f"{procedure} -> HTTP {status}: {raw[:300]!r}")
        return data


@dataclass
class Handshake:
    """Frames of one handshake: ``hello``, ``subscribed``, the catch-up projection
    frames (in order) and ``caught_up``."""

    hello: pb.RealtimeServerHello
    subscribed: pb.RealtimeSubscribed
    catchup: list[pb.RealtimeProjectionEvent] = field(default_factory=list)
    caught_up: pb.RealtimeCaughtUp | None = None


def op_names(ev: pb.RealtimeProjectionEvent) -> list[str]:
    """Operation oneof names of a projection event, in order."""
    return [op.WhichOneof("operation") for op in ev.operations]


class RawRealtime:
    """One raw realtime socket. ``await connect()``, ``send(frame)``, ``recv(timeout)``."""

    def __init__(self, ws_url: str, token: str | None = None, *, protocol_version: int = 2):
        self.ws_url = ws_url
        self.token = token
        self.protocol_version = protocol_version
        self.ws: ClientConnection | None = None

    @property
    def _open_ws(self) -> ClientConnection:
        """The socket :meth:`connect` opened; raises ``RuntimeError`` before it."""
        if self.ws is None:
            raise RuntimeError("RawRealtime: connect() first")
        return self.ws

    async def connect(self, **kw) -> RawRealtime:
        self.ws = await ws_connect(self.ws_url, max_size=None, open_timeout=10, **kw)
        return self

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def __aenter__(self) -> RawRealtime:
        return await self.connect()

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def send(self, frame: pb.RealtimeClientFrame | bytes | str) -> None:
        if isinstance(frame, pb.RealtimeClientFrame):
            frame = frame.SerializeToString()
        await self._open_ws.send(frame)

    async def send_hello(self, token: str | None | EllipsisType = ..., version: int | None = None) -> None:
        h = pb.RealtimeClientHello(protocol_version=self.protocol_version if version is None else version)
        tok = self.token if isinstance(token, EllipsisType) else token
        if tok is not None:
            h.bearer_token = tok
        await self.send(pb.RealtimeClientFrame(hello=h))

    async def send_subscribe(self, resume_cursor: str | None = None, retained: list[str] | tuple = ()) -> None:
        s = pb.RealtimeSubscribeEvents(retained_room_ids=list(retained))
        if resume_cursor is not None:
            s.resume_cursor = resume_cursor
        await self.send(pb.RealtimeClientFrame(subscribe_events=s))

    async def recv(self, timeout: float = 5.0) -> pb.RealtimeServerFrame:
        """Next server frame; raises ``TimeoutError`` or ``websockets.ConnectionClosed``."""
        data = await asyncio.wait_for(self._open_ws.recv(), timeout)
        if isinstance(data, str):
            raise AssertionError(f"server sent a text frame: {data[:100]!r}")
        f = pb.RealtimeServerFrame()
        f.ParseFromString(data)
        return f

    async def recv_kind(self, kind: str, timeout: float = 5.0, *, skip=("heartbeat",)) -> pb.RealtimeServerFrame:
        """Next frame of ``kind`` (oneof name); frames of kinds in ``skip`` are dropped,
        anything else raises ``AssertionError``."""
        while True:
            f = await self.recv(timeout)
            k = f.WhichOneof("frame")
            if k == kind:
                return f
            if k not in skip:
                raise AssertionError(f"expected {kind}, got {k}: {f}")

    async def next_projection(self, timeout: float = 5.0) -> pb.RealtimeProjectionEvent:
        return (await self.recv_kind("projection_event", timeout)).projection_event

    async def handshake(self, resume_cursor: str | None = None, retained=(), timeout: float = 10.0) -> Handshake:
        """hello → hello → subscribe → subscribed → catch-up → caught_up."""
        await self.send_hello()
        hello = (await self.recv_kind("hello", timeout, skip=())).hello
        await self.send_subscribe(resume_cursor, retained)
        sub = (await self.recv_kind("subscribed", timeout, skip=())).subscribed
        hs = Handshake(hello=hello, subscribed=sub)
        while True:
            f = await self.recv(timeout)
            k = f.WhichOneof("frame")
            if k == "projection_event":
                hs.catchup.append(f.projection_event)
            elif k == "caught_up":
                hs.caught_up = f.caught_up
                return hs
            else:
                raise AssertionError(f"unexpected frame during catch-up: {k}")

    async def barrier(self, timeout: float = 5.0) -> list[pb.RealtimeServerFrame]:
        """Send a ping and return every non-heartbeat frame received before its pong.

        The server answers frames in order, so an empty list proves that nothing was
        queued for this socket before the ping (a wait-free "nothing arrived" check).
        """
        nonce = f"barrier-{id(self)}-{asyncio.get_running_loop().time()}"
        await self.send(pb.RealtimeClientFrame(ping=pb.RealtimePing(nonce=nonce)))
        seen: list[pb.RealtimeServerFrame] = []
        while True:
            f = await self.recv(timeout)
            k = f.WhichOneof("frame")
            if k == "pong" and f.pong.nonce == nonce:
                return seen
            if k != "heartbeat":
                seen.append(f)

    async def wait_closed(self, timeout: float = 5.0) -> tuple[list[pb.RealtimeServerFrame], int | None]:
        """Read until the server closes; returns (frames read, WebSocket close code)."""
        frames = []
        try:
            while True:
                frames.append(await self.recv(timeout))
        except websockets.ConnectionClosed:
            pass
        rcvd = self._open_ws.protocol.close_rcvd
        return frames, (rcvd.code if rcvd is not None else None)
