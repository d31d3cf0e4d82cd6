"""The example scripts (examples/*/*.py), as CI compiles them: the tests
(test/python/compiler/test_examples.py, test_rocm.py) and scripts/ptx_fingerprint.py list and
load them here."""

import glob
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "*", "*.py")))


def example_id(path: str) -> str:
    """`family/name.py`: the path below examples/."""
    return os.path.relpath(path, os.path.join(ROOT, "examples"))


def load(path: str):
    """The example at `path` as a module (not run as __main__)."""
    name = "example_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
