"""The committed generated module ``chatto_pb2.py`` is what ``make proto`` produces from
``chatto.proto`` (regenerated into a temp dir with grpc_tools.protoc and compared byte for byte)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.paths import REPO

PROTO_DIR = REPO / "hermes_chatto" / "wire" / "proto"


def test_committed_pb2_matches_regenerated(tmp_path):
    pytest.importorskip("grpc_tools")
    cmd = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        "-I",
        str(PROTO_DIR.relative_to(REPO)),
        f"--python_out={tmp_path}",
        str((PROTO_DIR / "chatto.proto").relative_to(REPO)),
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    fresh = (tmp_path / "chatto_pb2.py").read_bytes()
    committed = (PROTO_DIR / "chatto_pb2.py").read_bytes()
    assert fresh == committed, "hermes_chatto/wire/proto/chatto_pb2.py is stale: run `make proto` and commit it"


def test_makefile_proto_target_uses_the_same_command():
    makefile = (REPO / "Makefile").read_text()
    assert (
        "-m grpc_tools.protoc -I hermes_chatto/wire/proto --python_out=hermes_chatto/wire/proto "
        "hermes_chatto/wire/proto/chatto.proto"
    ) in makefile
