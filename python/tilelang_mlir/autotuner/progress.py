"""Progress of a tuning run: a tqdm bar where tqdm is installed, and a log
line (INFO, "tilelang_mlir.autotuner") for every step."""

from __future__ import annotations

import logging
import os
from typing import Optional

logger = logging.getLogger("tilelang_mlir.autotuner")


def _quiet() -> bool:
    return os.environ.get("TILELANG_MLIR_AUTOTUNE_QUIET", "") not in ("", "0")


class _Progress:
    """A tqdm bar where tqdm is installed and not silenced; every step is
    also a log line (INFO)."""

    def __init__(self, total: int, desc: str):
        self.desc = desc
        self.total = total
        self.done = 0
        self.bar = None  # made at the first step

    def _make_bar(self):
        if _quiet():
            return None
        try:
            from tqdm import tqdm
        except ImportError:
            return None
        return tqdm(total=self.total, desc=self.desc, unit="config", leave=True,
                    dynamic_ncols=True)

    def step(self, line: str, postfix: Optional[str] = None) -> None:
        if self.done == 0:
            self.bar = self._make_bar()
        self.done += 1
        logger.info("%s [%d/%d] %s", self.desc, self.done, self.total, line)
        if self.bar is not None:
            if postfix is not None:
                self.bar.set_postfix_str(postfix, refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

