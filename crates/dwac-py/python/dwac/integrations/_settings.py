"""What the server backends read from the environment (``DWAC_*``), shared by
``dwac.integrations.sglang`` and ``dwac.integrations.vllm``."""

import os
from typing import Optional

import dwac


def env_number(name: str, default, kind=float):
    """``$name`` as a number (``kind``); unset: ``default``; empty, ``none`` or ``off``:
    ``None`` (no limit)."""
    v = os.environ.get(name)
    if v is None:
        return default
    if v.strip().lower() in ("", "none", "off"):
        return None
    try:
        return kind(v)
    except ValueError:
        raise ValueError(f"dwac: {name}={v!r} is not a number (or none)") from None


def budget() -> dict:
    """Each compile's budget: ``DWAC_MAX_SECONDS`` (default 10), ``DWAC_MAX_MEMORY_MB``
    (default 2048)."""
    return {
        "max_seconds": env_number("DWAC_MAX_SECONDS", dwac.DEFAULT_MAX_SECONDS),
        "max_memory_mb": env_number("DWAC_MAX_MEMORY_MB", dwac.DEFAULT_MAX_MEMORY_MB, int),
    }


def cache_dir() -> Optional[str]:
    """The artifact directory, ``DWAC_CACHE_DIR`` (unset or empty: none)."""
    return os.environ.get("DWAC_CACHE_DIR") or None
