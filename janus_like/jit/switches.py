"""The environment switches a JitFunction reads at run time, so tests and users can flip them
between calls: JANUS_LIKE_DISABLE (every call eager) and JANUS_LIKE_LOGS (topics printed to
stderr)."""
from __future__ import annotations

import os


def log_topics():
    raw = os.environ.get("JANUS_LIKE_LOGS", "")
    topics = _TOPICS.get(raw)
    if topics is None:
        topics = _TOPICS[raw] = frozenset(filter(None, raw.split(",")))
    return topics


_TOPICS: dict = {}  # the variable's text -> its topics (read on every logged event)


_ENV = getattr(os.environ, "_data", None)  # CPython's raw dict: a lookup here costs ~50 ns, not ~1 µs
_DISABLE_KEY = os.environ.encodekey("JANUS_LIKE_DISABLE") if hasattr(os.environ, "encodekey") else None


def disabled():
    """JANUS_LIKE_DISABLE is read on every call (so tests and users can flip it at run time)."""
    if _ENV is not None and _DISABLE_KEY is not None:
        v = _ENV.get(_DISABLE_KEY)
        return v is not None and v not in (b"", b"0", "", "0")
    return os.environ.get("JANUS_LIKE_DISABLE", "") not in ("", "0")


# The steady-state call's test: `ENV_GET(DISABLE_NAME) is None` exactly when the variable is
# unset (one dictionary lookup, no Python call); a call that finds it set takes the full path,
# where `disabled()` decides what its value means.
if _ENV is not None and _DISABLE_KEY is not None:
    ENV_GET, DISABLE_NAME = _ENV.get, _DISABLE_KEY
else:
    ENV_GET, DISABLE_NAME = os.environ.get, "JANUS_LIKE_DISABLE"
