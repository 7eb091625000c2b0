"""Conformance: the version string is not the protocol (a plain ``go build`` of Chatto reports
the ``Version`` variable of cli/version.go unless built with ``-ldflags -X main.Version=…``).

Such a binary reports its own string from ``GetServerProfile`` / ``GetServer``
(cli/internal/connectapi/server.go) and in the realtime snapshot's ``server`` profile
(realtime_snapshot.go), while still speaking realtime protocol 4 with bot keys.
``LocalChatto(version="0.4.8")`` is that server.
"""

from __future__ import annotations

import pytest

from chatto_local import LocalChatto
from chatto_local.rawclient import RawRealtime, RawRpc
from hermes_chatto.wire.proto import chatto_pb2 as pb


@pytest.fixture()
def plain():
    s = LocalChatto.demo(version="0.4.8")
    s.start_sync()
    yield s
    s.stop_sync()


def test_get_server_reports_the_plain_build_version(plain):
    _, data, _ = RawRpc(plain.base_url).call("chatto.discovery.v1.ServerDiscoveryService/GetServer", {})
    assert data["profile"]["version"] == "0.4.8"
    _, data, _ = RawRpc(plain.base_url).call("ServerService/GetServerProfile", {})
    assert data["profile"]["version"] == "0.4.8"


def test_bot_keys_work_on_a_plain_build(plain):
    status, data, _ = RawRpc(plain.base_url, plain.world.bot_key).call("ViewerService/GetViewer", {})
    assert status == 200 and "bot" in data["user"]["profile"]


async def test_realtime_speaks_protocol_4_with_the_plain_version_string(plain):
    async with RawRealtime(plain.ws_url, plain.world.bot_key) as sock:
        cu = await sock.subscribe(initial_state=pb.REALTIME_INITIAL_STATE_SNAPSHOT)
    assert cu.snapshot is not None and cu.snapshot.server.version == "0.4.8"
    assert cu.caught_up is not None and cu.caught_up.recovery == pb.REALTIME_RECOVERY_SNAPSHOT
