"""Minimal raw Chatto protocol clients (httpx + websockets, no project client modules).

Used by the local server's conformance suite (``tests/server/test_local_server*.py``) and handy
for acting as a person against any Chatto-compatible server from a script. They do no
retries, no classification and no error mapping: they show the wire as it is.

* :class:`RawRpc` — ``POST {base}/api/connect/{procedure}`` with JSON; returns
  ``(http_status, parsed_json_or_None, raw_bytes)``.
* :class:`RawRealtime` — one WebSocket at ``/api/realtime``: one binary ``RealtimeSubscribe``
  up, ``RealtimeServerFrame`` protobufs down (realtime protocol 4).
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
class CatchUp:
    """Frames of one subscribe up to ``caught_up``: the ``snapshot`` (or ``None``), the
    replayed events in order and ``caught_up`` — or the ``close`` that ended it instead."""

    snapshot: pb.RealtimeSnapshot | None = None
    events: list[pb.RealtimeEvent] = field(default_factory=list)
    caught_up: pb.RealtimeCaughtUp | None = None
    close: pb.RealtimeClose | None = None


def subscribe_frame(
    protocol_version: int = 4,
    token: str | None = None,
    resume_cursor: str | None = None,
    initial_state: int = pb.REALTIME_INITIAL_STATE_SNAPSHOT,
) -> bytes:
    """A serialized ``RealtimeSubscribe``."""
    sub = pb.RealtimeSubscribe(protocol_version=protocol_version, initial_state=initial_state)  # type: ignore[arg-type]
    if token is not None:
        sub.bearer_token = token
    if resume_cursor is not None:
        sub.resume_cursor = resume_cursor
    return sub.SerializeToString()


class RawRealtime:
    """One raw realtime socket. ``await connect()``, ``subscribe(...)``, ``recv(timeout)``."""

    def __init__(self, ws_url: str, token: str | None = None, *, protocol_version: int = 4):
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

    async def send_raw(self, data: bytes | str) -> None:
        await self._open_ws.send(data)

    async def send_subscribe(
        self,
        *,
        resume_cursor: str | None = None,
        initial_state: int = pb.REALTIME_INITIAL_STATE_SNAPSHOT,
        token: str | None | EllipsisType = ...,
        protocol_version: int | None = None,
    ) -> None:
        tok = self.token if isinstance(token, EllipsisType) else token
        version = self.protocol_version if protocol_version is None else protocol_version
        await self.send_raw(subscribe_frame(version, tok, resume_cursor, initial_state))

    async def recv(self, timeout: float = 5.0) -> pb.RealtimeServerFrame:
        """Next server frame; raises ``TimeoutError`` or ``websockets.ConnectionClosed``."""
        data = await asyncio.wait_for(self._open_ws.recv(), timeout)
        if isinstance(data, str):
            raise AssertionError(f"text frame from server: {data!r}")
        f = pb.RealtimeServerFrame()
        f.ParseFromString(data)
        return f

    async def recv_kind(self, kind: str, timeout: float = 5.0) -> pb.RealtimeServerFrame:
        """Skip frames until one of ``kind`` (``"event"``, ``"heartbeat"``, ``"close"`` …)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            f = await self.recv(max(0.01, deadline - loop.time()))
            if f.WhichOneof("frame") == kind:
                return f

    async def next_event(self, kind: str | None = None, timeout: float = 5.0) -> pb.RealtimeEvent:
        """The next ``event`` frame (of oneof ``kind`` when given), skipping heartbeats."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            ev = (await self.recv_kind("event", max(0.01, deadline - loop.time()))).event
            if kind is None or ev.WhichOneof("event") == kind:
                return ev

    async def subscribe(
        self,
        *,
        resume_cursor: str | None = None,
        initial_state: int = pb.REALTIME_INITIAL_STATE_SNAPSHOT,
        timeout: float = 10.0,
    ) -> CatchUp:
        """Send the subscribe and read up to ``caught_up`` (or the ``close`` that replaces it)."""
        await self.send_subscribe(resume_cursor=resume_cursor, initial_state=initial_state)
        out = CatchUp()
        while True:
            f = await self.recv(timeout)
            k = f.WhichOneof("frame")
            if k == "snapshot":
                out.snapshot = f.snapshot
            elif k == "event":
                out.events.append(f.event)
            elif k == "caught_up":
                out.caught_up = f.caught_up
                return out
            elif k == "close":
                out.close = f.close
                return out

    async def wait_closed(self, timeout: float = 5.0) -> tuple[int | None, str]:
        """Wait for the server to close; returns ``(ws close code, reason)``."""
        ws = self._open_ws
        try:
            while True:
                await asyncio.wait_for(ws.recv(), timeout)
        except websockets.ConnectionClosed as e:
            rcvd = e.rcvd
            return (rcvd.code if rcvd else None), (rcvd.reason if rcvd else "")
