"""The tuner's memory: each key's winner record, in this process and on
disk (`<kernel cache>/autotune/<key>.json`, schema- and sha256-checked; a
bad file is deleted with a KernelCacheWarning), and why a kernel did not
compile (`<kernel cache>/autotune/failed/`)."""

from __future__ import annotations

import json
import os
import threading
from typing import Dict, Optional

# Version 2: entries carry a sha256 of their contents and are schema-checked.
CACHE_VERSION = 2


def _cache_root() -> Optional[str]:
    from ..compiler.compile import cache_dir

    d = cache_dir()
    return os.path.join(d, "autotune") if d else None


_MEMORY: Dict[str, dict] = {}  # key -> the entry written to disk
_MEMORY_LOCK = threading.Lock()


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x


# The fields of an entry and a check of each value (see AutoTuner._entry).
_ENTRY_FIELDS = {
    "version": lambda v: v == CACHE_VERSION and _is_int(v),
    "key": lambda v: isinstance(v, str),
    "factory": lambda v: isinstance(v, str),
    "target": lambda v: isinstance(v, str),
    "device": lambda v: v is None or isinstance(v, str),
    "best": lambda v: _is_int(v) and v >= 0,
    "best_config": lambda v: isinstance(v, dict),
    "best_latency": lambda v: _is_number(v) and v >= 0,
    "timings": lambda v: isinstance(v, list) and all(
        isinstance(t, dict) and set(t) == {"index", "config", "latency", "check"}
        and _is_int(t["index"]) and t["index"] >= 0 and isinstance(t["config"], dict)
        and _is_number(t["latency"]) for t in v),
    "skipped": lambda v: isinstance(v, list) and all(
        isinstance(t, dict) and set(t) == {"index", "config", "stage", "reason"}
        and _is_int(t["index"]) and t["index"] >= 0 and isinstance(t["config"], dict)
        and t["stage"] in ("compile", "check", "run") and isinstance(t["reason"], str)
        for t in v),
    "worker_pids": lambda v: isinstance(v, list) and all(_is_int(p) for p in v),
    "compile_seconds": _is_number,
    "tuned": lambda v: isinstance(v, str),
    "sha256": lambda v: isinstance(v, str),
}


def _check_entry(entry, key: str) -> None:
    """Raises BadEntry unless `entry` (read from JSON) is a winner record of
    this version for `key` whose sha256 matches its contents."""
    from ..runtime.cache import BadEntry, digest

    if not isinstance(entry, dict):
        raise BadEntry(f"is a JSON {type(entry).__name__}, not an autotune record")
    if entry.get("version") != CACHE_VERSION or not _is_int(entry.get("version")):
        raise BadEntry(f"has version {entry.get('version')!r}; this tilelang_mlir reads "
                       f"version {CACHE_VERSION}")
    if set(entry) != set(_ENTRY_FIELDS):
        fields = sorted(set(entry) ^ set(_ENTRY_FIELDS))
        raise BadEntry(f"does not have the fields of an autotune record ({', '.join(fields)})")
    if entry["key"] != key:
        raise BadEntry(f"holds the winner of key {entry['key']!r}, not {key!r}")
    wrong = [k for k, check in _ENTRY_FIELDS.items() if not check(entry[k])]
    if wrong:
        raise BadEntry(f"has malformed field(s) {', '.join(wrong)}")
    if entry["sha256"] != digest({k: v for k, v in entry.items() if k != "sha256"}):
        raise BadEntry("does not match its sha256 (it was changed)")


def _entry_path(key: str) -> Optional[str]:
    root = _cache_root()
    return os.path.join(root, key + ".json") if root else None


def _load_entry(key: str) -> Optional[dict]:
    """The winner record of `key`, from memory or disk; None when there is
    none. One that fails its checks is discarded with a warning (tuning
    then runs again)."""
    from ..runtime.cache import BadEntry, read_json

    with _MEMORY_LOCK:
        if key in _MEMORY:
            return _MEMORY[key]
    path = _entry_path(key)
    if path is None:
        return None
    st = None
    try:
        entry, st = read_json(path)
        if st is None:
            return None
        _check_entry(entry, key)
    except BadEntry as e:
        _discard_entry(key, str(e), e.stat or st)
        return None
    with _MEMORY_LOCK:
        _MEMORY[key] = entry
    return entry


def _discard_entry(key: str, reason: str, stat=None) -> None:
    """Forgets the winner record of `key` and deletes its file, warning."""
    from ..runtime.cache import discard

    with _MEMORY_LOCK:
        _MEMORY.pop(key, None)
    path = _entry_path(key)
    if path is not None:
        if stat is None:
            try:
                stat = os.stat(path)
            except OSError:
                return
        discard(path, reason, stat, "autotune cache entry", "tuning again", stacklevel=3)


def _save_entry(key: str, entry: dict) -> Optional[str]:
    with _MEMORY_LOCK:
        _MEMORY[key] = entry
    root = _cache_root()
    if root is None:
        return None
    path = os.path.join(root, key + ".json")
    try:
        os.makedirs(root, exist_ok=True)
        tmp = os.path.join(root, f".{key}.{os.getpid()}.tmp")
        with open(tmp, "w") as f:
            json.dump(entry, f, indent=1)
        os.replace(tmp, path)
    except OSError:
        return None  # a read-only cache is not an error
    return path


def _forget_entry(key: str) -> None:
    with _MEMORY_LOCK:
        _MEMORY.pop(key, None)
    root = _cache_root()
    if root is not None:
        try:
            os.remove(os.path.join(root, key + ".json"))
        except OSError:
            pass



def _remembered(reason: str, kernel_key: Optional[str]) -> str:
    """Why a kernel did not compile is kept in the cache by the kernel's
    key, so that a machine without the compiler (which loads kernels from
    the cache) says why rather than that the kernel is not in the cache."""
    from ..compiler.compile import offline

    root = _cache_root()
    if root is None or not kernel_key:
        return reason
    path = os.path.join(root, "failed", kernel_key + ".txt")
    if offline():
        try:
            with open(path) as f:
                return f"{f.read().strip()} (when compiled)"
        except OSError:
            return reason
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(reason + "\n")
    except OSError:
        pass
    return reason
