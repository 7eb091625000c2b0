"""Our hand-written schema subset (``hermes_chatto/wire/proto/chatto.proto``) against Chatto
v0.5.0-beta.20's own, read from chattolib 0.5.0b20's generated descriptors.

Compared **structurally**: message and package names are ours, so each of our messages is
matched to the upstream message reached by the same field numbers from the matching root
(our ``RealtimeEvent.message_edited`` is a ``MessageRefEvent``; upstream field 25 is a
``MessageEditedEvent``; both must have the same fields). For every field of ours: upstream
has the same number with the same name, JSON name, type, repeatedness and presence; message
fields recurse, enum values must have the same numbers and names. Our ``Duration`` maps to
``google.protobuf.Duration``. Roots: ``RealtimeSubscribe``, ``RealtimeServerFrame``, every
ConnectRPC request/response of our proto, and every RPC the plugin calls (found in
``wire/connect.py`` and ``wire/assets.py``), which must exist upstream with the same path.

Schema drift (a renumbered, renamed, retyped or removed field, a removed RPC) fails here.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import sys
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

import hermes_chatto.wire as wire_pkg
from hermes_chatto.wire.proto import chatto_pb2 as pb

chattolib_pb = pytest.importorskip("chattolib._pb", reason="chattolib[realtime]==0.5.0b20 is a test dependency")

for _m in pkgutil.walk_packages(chattolib_pb.__path__, chattolib_pb.__name__ + "."):
    if _m.name.endswith("_pb2"):
        importlib.import_module(_m.name)

UPSTREAM_POOL = descriptor_pool.Default()
OURS = pb.DESCRIPTOR
#: The packages a bot calls (``chatto.admin.v1`` has types of the same names).
PUBLIC_PACKAGES = ("chatto.api.v1.", "chatto.discovery.v1.")
#: Messages of ours named like an RPC type that are not one (nested types of RPC messages).
NOT_RPC = {"PageRequest"}


def _upstream_methods() -> dict[tuple[str, str], tuple[Descriptor, Descriptor]]:
    """``(service full name, method) -> (input, output)`` of every upstream service."""
    out: dict[tuple[str, str], tuple[Descriptor, Descriptor]] = {}
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith(chattolib_pb.__name__ + ".") or not mod_name.endswith("_pb2"):
            continue
        for svc in mod.DESCRIPTOR.services_by_name.values():
            for meth in svc.methods:
                out[(svc.full_name, meth.name)] = (meth.input_type, meth.output_type)
    return out


METHODS = _upstream_methods()


# ----------------------------------------------------------------------------- structural compare


def _kind(f: FieldDescriptor) -> str:
    return {FieldDescriptor.TYPE_MESSAGE: "message", FieldDescriptor.TYPE_ENUM: "enum"}.get(f.type, str(f.type))


def compare_enum(ours: EnumDescriptor, theirs: EnumDescriptor, path: str) -> list[str]:
    problems = []
    for v in ours.values:
        t = theirs.values_by_number.get(v.number)
        if t is None:
            problems.append(f"{path}: enum value {v.name} = {v.number} missing upstream ({theirs.full_name})")
        elif t.name != v.name:
            problems.append(f"{path}: enum value {v.number} is {t.name} upstream, ours {v.name}")
    return problems


def compare(ours: Descriptor, theirs: Descriptor, path: str, seen: set[tuple[str, str]] | None = None) -> list[str]:
    """Every difference of ``ours`` from ``theirs`` that changes what we read or write."""
    seen = set() if seen is None else seen
    key = (ours.full_name, theirs.full_name)
    if key in seen:
        return []
    seen.add(key)
    problems: list[str] = []
    if ours.GetOptions().map_entry != theirs.GetOptions().map_entry:
        problems.append(f"{path}: map entry on one side only")
    for f in ours.fields:
        where = f"{path}.{f.name}"
        t = theirs.fields_by_number.get(f.number)
        if t is None:
            problems.append(f"{where} = {f.number}: no such field number upstream ({theirs.full_name})")
            continue
        if t.name != f.name:
            problems.append(f"{where} = {f.number}: upstream calls it {t.name}")
        if t.json_name != f.json_name:
            problems.append(f"{where}: JSON name {f.json_name} vs upstream {t.json_name}")
        if t.type != f.type:
            problems.append(f"{where}: type {_kind(f)} vs upstream {_kind(t)}")
            continue
        if t.is_repeated != f.is_repeated:
            problems.append(f"{where}: repeated {f.is_repeated} vs upstream {t.is_repeated}")
        if not f.is_repeated and t.has_presence != f.has_presence:
            problems.append(f"{where}: presence {f.has_presence} vs upstream {t.has_presence}")
        if (f.containing_oneof is None) != (t.containing_oneof is None) and not (
            f.has_presence and t.has_presence  # proto3 `optional` is a synthetic oneof
        ):
            problems.append(f"{where}: oneof membership differs")
        if f.type == FieldDescriptor.TYPE_MESSAGE:
            problems += compare(f.message_type, t.message_type, where, seen)
        elif f.type == FieldDescriptor.TYPE_ENUM:
            problems += compare_enum(f.enum_type, t.enum_type, where)
    return problems


# ----------------------------------------------------------------------------- roots


def test_realtime_roots_match_beta20():
    for name in ("RealtimeSubscribe", "RealtimeServerFrame"):
        theirs = UPSTREAM_POOL.FindMessageTypeByName(f"chatto.realtime.v1.{name}")
        problems = compare(OURS.message_types_by_name[name], theirs, name)
        assert not problems, "\n".join(problems)


def test_our_duration_is_googles():
    theirs = UPSTREAM_POOL.FindMessageTypeByName("google.protobuf.Duration")
    assert not compare(OURS.message_types_by_name["Duration"], theirs, "Duration")


def _rpc_messages() -> list[str]:
    return sorted(n for n in OURS.message_types_by_name if n.endswith(("Request", "Response")) and n not in NOT_RPC)


@pytest.mark.parametrize("name", _rpc_messages())
def test_every_rpc_message_of_ours_matches_an_upstream_rpc_type(name):
    """Matched by name among the input (``…Request``) or output (``…Response``) types of the
    upstream ``chatto.api.v1`` / ``chatto.discovery.v1`` services; every upstream type of that
    name must agree."""
    side = 0 if name.endswith("Request") else 1
    candidates = {
        io[side].full_name: io[side]
        for (service, _), io in METHODS.items()
        if io[side].name == name and service.startswith(PUBLIC_PACKAGES)
    }
    assert candidates, f"{name}: no upstream RPC takes or returns a message of that name"
    for full, theirs in candidates.items():
        problems = compare(OURS.message_types_by_name[name], theirs, name)
        assert not problems, f"vs {full}:\n" + "\n".join(problems)


# ----------------------------------------------------------------------------- the RPCs the plugin calls


def _constants(tree: ast.Module) -> dict[str, str]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = node.value.value
    return out


def _str(node: ast.expr, consts: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    return None


def _pb_name(node: ast.expr) -> str | None:
    """``pb.X`` or ``pb.X(...)`` → ``"X"``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "pb":
        return node.attr
    return None


def _request_class(call: ast.Call, func: ast.AST, arg: ast.expr) -> str | None:
    """The ``pb`` class of the request argument: ``pb.X(...)`` inline, or the last
    ``<name> = pb.X(...)`` before the call in the same function."""
    direct = _pb_name(arg)
    if direct or not isinstance(arg, ast.Name):
        return direct
    found = None
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Assign)
            and node.lineno < call.lineno
            and any(isinstance(t, ast.Name) and t.id == arg.id for t in node.targets)
            and _pb_name(node.value)
        ):
            if found is None or node.lineno > found[0]:
                found = (node.lineno, _pb_name(node.value))
    return found[1] if found else None


def called_rpcs() -> list[tuple[str, str, str | None, str | None]]:
    """``(package.Service, Method, request class, response class)`` of every ``self._call(PKG,
    "Service", "Method", req, pb.Resp)`` in wire/connect.py and ``self._client.call(SERVICE,
    "Method", req, pb.Resp)`` in wire/assets.py."""
    root = Path(wire_pkg.__file__).parent
    out = []
    for fname, api in (("connect.py", None), ("assets.py", "chatto.api.v1")):
        tree = ast.parse((root / fname).read_text(encoding="utf-8"))
        consts = _constants(tree)
        for func in ast.walk(tree):
            if not isinstance(func, ast.AsyncFunctionDef | ast.FunctionDef):
                continue
            for call in ast.walk(func):
                if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
                    continue
                args = call.args
                if call.func.attr == "_call" and api is None and len(args) >= 5:
                    pkg, svc, meth = (_str(a, consts) for a in args[:3])
                    req, resp = args[3], args[4]
                elif call.func.attr == "call" and api is not None and len(args) >= 4:
                    pkg, svc, meth = api, _str(args[0], consts), _str(args[1], consts)
                    req, resp = args[2], args[3]
                else:
                    continue
                if pkg is None or svc is None or meth is None:
                    continue  # the generic dispatcher (`call`) itself
                out.append((f"{pkg}.{svc}", meth, _request_class(call, func, req), _pb_name(resp)))
    return out


CALLED = called_rpcs()


def test_the_rpc_scan_finds_the_calls():
    paths = {f"{s}/{m}" for s, m, _, _ in CALLED}
    for must in (
        "chatto.discovery.v1.ServerDiscoveryService/GetServer",
        "chatto.api.v1.MessageService/CreateMessage",
        "chatto.api.v1.ThreadService/GetThreadEvents",
        "chatto.api.v1.RoomService/RefreshTypingIndicator",
        "chatto.api.v1.AssetUploadService/CreateUpload",
        "chatto.api.v1.AssetService/GetAsset",
    ):
        assert must in paths, sorted(paths)
    assert all(resp for _, _, _, resp in CALLED), CALLED


@pytest.mark.parametrize(("service", "method", "req", "resp"), CALLED, ids=[f"{s}/{m}" for s, m, _, _ in CALLED])
def test_every_called_rpc_exists_upstream_with_matching_types(service, method, req, resp):
    assert (service, method) in METHODS, f"{service}/{method} is not an RPC of Chatto v0.5.0-beta.20"
    their_in, their_out = METHODS[(service, method)]
    req = req or resp.removesuffix("Response") + "Request"
    problems = compare(OURS.message_types_by_name[req], their_in, req)
    problems += compare(OURS.message_types_by_name[resp], their_out, resp)
    assert not problems, "\n".join(problems)


# ----------------------------------------------------------------------------- the check itself


def _mutated(edit) -> descriptor_pool.DescriptorPool:
    """Our schema with ``edit(FileDescriptorProto)`` applied, in a pool of its own."""
    fdp = descriptor_pb2.FileDescriptorProto()
    OURS.CopyToProto(fdp)
    edit(fdp)
    pool = descriptor_pool.DescriptorPool()
    for dep in OURS.dependencies:
        dp = descriptor_pb2.FileDescriptorProto()
        dep.CopyToProto(dp)
        pool.Add(dp)
    pool.Add(fdp)
    return pool


def _field(fdp, message: str, field: str):
    msg = next(m for m in fdp.message_type if m.name == message)
    return next(f for f in msg.field if f.name == field)


@pytest.mark.parametrize(
    "edit",
    [
        lambda fdp: setattr(_field(fdp, "RealtimeCaughtUp", "cursor"), "number", 3),  # renumbered
        lambda fdp: setattr(_field(fdp, "MessagePostedEvent", "room_id"), "name", "room"),  # renamed
        lambda fdp: setattr(
            _field(fdp, "RealtimeHeartbeat", "cursor"), "type", descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
        ),
        lambda fdp: setattr(_field(fdp, "MessageMention", "includes_viewer"), "number", 7),  # deep inside an event
        lambda fdp: setattr(_field(fdp, "User", "bot"), "number", 8),  # the old is_bot slot
    ],
    ids=["renumbered", "renamed", "retyped", "nested", "user-bot"],
)
def test_drift_is_detected(edit):
    pool = _mutated(edit)
    mutated = pool.FindMessageTypeByName(f"{OURS.package}.RealtimeServerFrame")
    theirs = UPSTREAM_POOL.FindMessageTypeByName("chatto.realtime.v1.RealtimeServerFrame")
    problems = compare(mutated, theirs, "RealtimeServerFrame")
    if not problems:  # User is reached from the RPCs, not from the realtime frame
        mutated = pool.FindMessageTypeByName(f"{OURS.package}.GetViewerResponse")
        theirs = METHODS[("chatto.api.v1.ViewerService", "GetViewer")][1]
        problems = compare(mutated, theirs, "GetViewerResponse")
    assert problems
