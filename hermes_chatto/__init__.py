"""hermes-chatto: a Hermes agent gateway platform plugin that puts the agent on a Chatto
chat server (≥ 0.5.0) as a bot account.

Entry point ``hermes_agent.plugins: chatto = "hermes_chatto"`` (the module — the loader
calls ``getattr(module, "register")``). :func:`register` runs eagerly whenever Hermes
discovers plugins (CLI processes too), so importing this package is cheap: no httpx,
websockets or protobuf at module load; the adapter, the wire layer and the settings are
imported lazily inside the hooks.
"""

from __future__ import annotations

from typing import Any

__all__ = ["register", "PLATFORM_NAME"]
__version__ = "0.1.0"

PLATFORM_NAME = "chatto"

# the thread block's legend (what it is, what its marks mean) is said here, once per session
# in the system prompt, instead of in every block (issue 26: the block's fixed cost)
from .frontier.render import INTRO as _BLOCK_LEGEND  # noqa: E402 - pure, stdlib-only module

PLATFORM_HINT = (
    "You are talking on Chatto, a team chat. Messages support Markdown (code blocks, lists, links). "
    "In channels you answer inside a thread; mention people as @login. Long answers are split into "
    "several messages automatically. " + _BLOCK_LEGEND + " The chatto_read_thread tool (when enabled) "
    "reads a message the block cut, in full, and replies the block left out."
)


def _deps_importable() -> bool:
    """``check_fn``: the runtime dependencies are installed (a passive probe: no import)."""
    from importlib.util import find_spec

    try:
        return all(find_spec(m) is not None for m in ("httpx", "websockets", "google.protobuf", "pydantic_settings"))
    except (ImportError, ValueError):
        return False


def _factory(pconfig: Any):
    """``adapter_factory``: imports the adapter (and the wire layer) only now.

    A configuration error is logged as one line with its reason (``config.
    report_config_error``, which reaches ``gateway.log``) and ``None`` is returned: the
    host then logs its generic "adapter creation failed" instead of a traceback.
    """
    from .adapter import ChattoAdapter
    from .config import ChattoConfigError, report_config_error

    try:
        return ChattoAdapter(pconfig)
    except ChattoConfigError as exc:
        report_config_error(exc)
        return None


def _validate(pconfig: Any) -> bool:
    from .config import validate_config

    return validate_config(pconfig)


def _is_connected(pconfig: Any) -> bool:
    from .config import is_connected

    return is_connected(pconfig)


def _env_enablement():
    from .config import env_enablement

    return env_enablement()


def _setup() -> None:
    from .setup_wizard import setup_fn

    setup_fn()


async def _standalone_send(
    pconfig: Any,
    chat_id: str,
    message: str,
    *,
    thread_id: str | None = None,
    media_files: Any = None,
    force_document: bool = False,
) -> dict:
    """``standalone_sender_fn`` for cron / ``hermes send`` when no gateway runs in this
    process: :func:`hermes_chatto.adapter.standalone.send_standalone` (a short-lived client
    with the profile's settings, then the same send path as a reply: byte split, one
    thread root, stop at the first failure, resume on retry). ``media_files``
    (``[(path, is_voice)]``, from ``MEDIA:`` tags) are uploaded and attached like a
    reply's (≤ 10 per message); a file that could not be attached fails the send.

    Returns ``{"success": True, "message_id": <last>, "message_ids": [...]}`` or
    ``{"error": "chunk 2 of 3 failed: …", "message_ids": [<sent>]}``.
    """
    from .adapter.standalone import RoomLookupError, send_standalone
    from .config import ChattoConfigError, load_settings
    from .wire.errors import ChattoError

    try:
        settings = load_settings(pconfig)
    except ChattoConfigError as e:
        return {"error": f"Chatto is not configured: {e}"}
    files = _outbound_files(media_files)
    if not (message or "").strip() and not files:
        return {"error": "empty message"}
    try:
        sent = await send_standalone(settings, str(chat_id), message, thread_id=thread_id, files=files)
    except RoomLookupError as e:
        return {"error": f"Chatto room {chat_id}: {e.cause}"}
    except ChattoError as e:
        return {"error": f"Chatto send failed: {e}"}
    report = sent.report
    assert report is not None  # a room looked up by id is never "no match"
    out: dict[str, Any]
    if report.ok:
        out = {
            "success": True,
            "message_id": report.sent_ids[-1] if report.sent_ids else None,
            "message_ids": list(report.sent_ids),
        }
    else:
        out = {"error": report.describe(), "message_ids": list(report.sent_ids)}
    return out


def _outbound_files(media_files: Any) -> list:
    """``[(path, is_voice), …]`` (or bare paths) → ``OutboundFile`` list."""
    from .adapter.uploads import OutboundFile

    out = []
    for item in media_files or []:
        path = item[0] if isinstance(item, (tuple, list)) else item
        if path:
            out.append(OutboundFile(str(path)))
    return out


def _parse_target_ref(ref: str):
    """Newer hosts' ``parse_target_ref_fn``: ``<room id>`` or ``<room id>:<thread root id>``
    (Chatto ids are ``R``/``E`` + 14 letters/digits) → ``(chat_id, thread_id)``; else None."""
    import re

    m = re.fullmatch(r"\s*(R[0-9A-Za-z]{14})(?::(E[0-9A-Za-z]{14}))?\s*", str(ref or ""))
    return (m.group(1), m.group(2)) if m else None


def _validate_target_ref(ref: str):
    """Newer hosts' ``validate_target_ref_fn``: True, or a reason string."""
    return True if _parse_target_ref(ref) else "expected a Chatto room id (R…) optionally followed by :<thread id> (E…)"


def register(ctx: Any) -> None:
    """Plugin entry: registers the ``chatto`` platform, the opt-in ``chatto`` toolset
    (``chatto_send_message``) and ``hermes chatto …`` (doctor/setup/settings).

    ``max_message_length`` is 0 on purpose: the host's stand-alone chunker counts
    *characters* and appends ``(i/N)`` markers, while Chatto's cap is 10,000 UTF-8
    *bytes*; with 0 the host hands the whole text to ``standalone_sender_fn`` / ``send()``,
    which split by bytes exactly like a reply. Newer-only ``PlatformEntry`` fields are
    passed only when this host has them (``compat.entry_kwargs``).
    """
    from . import compat

    kw = compat.entry_kwargs(
        is_connected=_is_connected,
        env_enablement_fn=_env_enablement,
        standalone_sender_fn=_standalone_send,
        allowed_users_env="CHATTO_ALLOWED_USERS",
        allow_all_env="CHATTO_ALLOW_ALL_USERS",
        cron_deliver_env_var="CHATTO_HOME_CHANNEL",
        max_message_length=0,
        platform_hint=PLATFORM_HINT,
        emoji="💬",
        setup_fn=_setup,
        pii_safe=False,
        allow_update_command=True,
        # newer hosts only (dropped by compat.entry_kwargs on 0.19.0):
        parse_target_ref_fn=_parse_target_ref,
        validate_target_ref_fn=_validate_target_ref,
    )
    ctx.register_platform(
        name=PLATFORM_NAME,
        label="Chatto",
        adapter_factory=_factory,
        check_fn=_deps_importable,
        validate_config=_validate,
        required_env=["CHATTO_URL", "CHATTO_BOT_KEY"],
        install_hint="pip install hermes-chatto",
        **kw,
    )
    register_tool = getattr(ctx, "register_tool", None)
    if callable(register_tool):
        try:
            from .tools import register_tools

            register_tools(ctx)
        except Exception as e:  # a tool problem must not take the platform down
            from .logs import get_logger

            get_logger(__name__).warning("chatto_send_message not registered: %s", e)
    if callable(getattr(ctx, "register_cli_command", None)):
        try:
            from .cli import register_cli
        except ImportError:
            pass
        else:
            try:
                register_cli(ctx)
            except Exception as e:
                from .logs import get_logger

                get_logger(__name__).warning("hermes chatto CLI not registered: %s", e)
