"""The ``config.yaml`` of every Hermes home a test, the demo or a benchmark starts a gateway in.

One writer for all of them (tests/conftest.py ``write_config``, :mod:`chatto_local.harness`,
bench/_gateway.py and the host tests that write a profile by hand), so no gateway a test starts
can reach the network or change the venv:

* ``security.allow_lazy_installs: false``: hermes-agent 0.19.0 pip-installs optional packages
  into the running venv the first time a path needs them (``tools/lazy_deps.py``): boto3 when
  ``agent.bedrock_adapter`` is imported, edge-tts when the TTS tool checks its requirements.
  Mid-test that takes tens of seconds, needs the network, and changed the suite's own venv
  (boto3's botocore downgraded python-dateutil). Off, the path reports the package missing.
* a provider configured (``custom``, pointed at the scripted model or, where the model call is
  stubbed, at the discard port 9 where nothing answers): without one, Hermes resolves the
  runtime provider through its fallbacks on every turn, and ``has_aws_credentials`` imports
  ``agent.bedrock_adapter`` (the boto3 lazy install above, and a botocore session).
* tirith, title generation, the environment probe, the nudges and the onboarding off: each
  would run a subprocess, a second model call or a download the test does not look at.

:data:`LAZY_INSTALLS_OFF_ENV` is the same switch as an environment variable (tests/conftest.py
sets it for the whole run, so a Hermes home written some other way is covered too).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

#: hermes-agent 0.19.0 ``tools/lazy_deps.py``: ``HERMES_DISABLE_LAZY_INSTALLS=1`` seals the
#: venv (installs refused unless ``HERMES_LAZY_INSTALL_TARGET`` names another directory).
LAZY_INSTALLS_OFF_ENV = {"HERMES_DISABLE_LAZY_INSTALLS": "1"}

#: The model block for a home whose model is never called (the model call is stubbed):
#: port 9 is "discard"; nothing listens there on a test machine.
UNCALLED_MODEL: dict[str, Any] = {
    "provider": "custom",
    "default": "uncalled-model",
    "base_url": "http://127.0.0.1:9/v1",
    "api_key": "sk-uncalled",
    "context_length": 131072,
}

_OFFLINE: dict[str, Any] = {
    "security": {"allow_lazy_installs": False, "tirith_enabled": False},
    "auxiliary": {"title_generation": {"enabled": False}},
    "agent": {"environment_probe": False, "api_max_retries": 1},
    "memory": {"nudge_interval": 0},
    "skills": {"creation_nudge_interval": 0},
    "onboarding": {"profile_build": "off"},
}


def merge_config(base: dict[str, Any], extra: dict[str, Any]) -> None:
    """Merge ``extra`` into ``base`` in place: dicts key by key, anything else replaced."""
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            merge_config(base[k], v)
        else:
            base[k] = v


def hermes_config(
    *,
    model: dict[str, Any] | None = None,
    platform: dict[str, Any] | None = None,
    plugins: tuple[str, ...] | list[str] | None = ("chatto",),
    top: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The offline ``config.yaml`` as a dict.

    ``model``: the ``model`` block (default :data:`UNCALLED_MODEL`); ``platform``: the
    ``platforms.chatto`` block (none when ``None``); ``plugins``: ``plugins.enabled`` (no
    ``plugins`` key when ``None``); ``top``: merged last (:func:`merge_config`), so a test can
    override any key, including the offline ones."""
    cfg: dict[str, Any] = {"model": dict(model or UNCALLED_MODEL), **copy.deepcopy(_OFFLINE)}
    if plugins is not None:
        cfg["plugins"] = {"enabled": list(plugins)}
    if platform is not None:
        cfg["platforms"] = {"chatto": platform}
    merge_config(cfg, copy.deepcopy(top or {}))
    return cfg


def write_hermes_config(home: str | Path, **kw: Any) -> Path:
    """Write :func:`hermes_config` (same keywords) to ``<home>/config.yaml``; returns the path."""
    import yaml

    path = Path(home) / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(hermes_config(**kw), sort_keys=False), encoding="utf-8")
    return path
