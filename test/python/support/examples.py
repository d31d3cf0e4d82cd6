"""The example scripts as CI compiles them: scripts/example_programs.py
(which scripts/ptx_fingerprint.py uses too), loaded from its file."""

import importlib.util
import os
import sys

from support import ROOT

_spec = importlib.util.spec_from_file_location(
    "example_programs", os.path.join(ROOT, "scripts", "example_programs.py"))
_module = sys.modules.setdefault("example_programs", importlib.util.module_from_spec(_spec))
if not hasattr(_module, "EXAMPLES"):
    _spec.loader.exec_module(_module)

EXAMPLES, ROOT, example_id, load = _module.EXAMPLES, _module.ROOT, _module.example_id, _module.load
