"""Conformance: the local server imitating a plain ``go build`` of Chatto main (issue 13 item 7).

Chatto main's ``cli/version.go`` sets ``var Version = "0.4.8"``; only a build with
``-ldflags "-X main.Version=…"`` (the release and e2e builds) reports ``0.5.0-dev``. The
version string is not the protocol: such a binary reports ``0.4.8`` from
``ServerDiscoveryService/GetServer`` (``cli/internal/connectapi/server.go``) and in
the realtime server hello (``cli/internal/http_server/realtime.go``, ``ServerVersion``), and
still speaks realtime protocol 2 (``realtimeProtocolVersion = 2`` there) with bot keys.
``LocalChatto(version="0.4.8")`` (protocol 2 by default) is that server.
"""

from __future__ import annotations

import pytest

from chatto_local import LocalChatto
from chatto_local.rawclient import RawRealtime, RawRpc


@pytest.fixture()
def plain():
    s = LocalChatto.demo(version="0.4.8")
    s.start_sync()
    yield s
    s.stop_sync()


def test_get_server_reports_the_plain_build_version(plain):
    _, data, _ = RawRpc(plain.base_url).call("chatto.discovery.v1.ServerDiscoveryService/GetServer", {})
    assert data["profile"]["version"] == "0.4.8"


def test_bot_keys_work_on_a_plain_build(plain):
    status, data, _ = RawRpc(plain.base_url, plain.world.bot_key).call("ViewerService/GetViewer", {})
    assert status == 200 and data["user"]["profile"]["isBot"] is True


async def test_realtime_speaks_protocol_2_with_the_plain_version_string(plain):
    async with RawRealtime(plain.ws_url, plain.world.bot_key) as sock:
        await sock.send_hello()
        h = (await sock.recv_kind("hello", skip=())).hello
    assert (h.protocol_version, h.server_version) == (2, "0.4.8")
    assert "chatto.realtime.projection.v1" in h.capabilities


async def test_keyless_hello_v2_passes_the_version_check_then_needs_auth(plain):
    """realtime.go checks ``protocol_version`` before authentication: a key-less hello v2 gets
    ``authentication_required`` (not ``unsupported_protocol``) from a protocol-2 server."""
    async with RawRealtime(plain.ws_url, "") as sock:
        await sock.send_hello(token=None)
        frames, close = await sock.wait_closed()
    errors = [f.error for f in frames if f.WhichOneof("frame") == "error"]
    assert errors and errors[-1].code == "authentication_required" and errors[-1].fatal
    assert close == 1008
