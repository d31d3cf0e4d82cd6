"""A per-thread stack of the objects a `with` block makes current
(`tvm.target.Target`, `tvm.transform.PassContext`)."""

from __future__ import annotations

import threading
from typing import Any, List, Optional


class ContextStack:
    def __init__(self):
        self._local = threading.local()

    def _items(self) -> List[Any]:
        items = getattr(self._local, "items", None)
        if items is None:
            items = self._local.items = []
        return items

    def push(self, item) -> None:
        self._items().append(item)

    def pop(self) -> None:
        self._items().pop()

    def top(self) -> Optional[Any]:
        items = self._items()
        return items[-1] if items else None

    def all(self) -> List[Any]:
        return list(self._items())
