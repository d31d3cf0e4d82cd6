#!/bin/bash
# TileLang's own frontend on this machine, no GPU needed: installs the pinned
# wheels of requirements/tilelang-reference.txt into .tl-ref/ (once) and runs
# a Python program with TileLang importable, e.g. to read how TileLang types
# an expression from a program's `.script()`:
#
#   scripts/tilelang_reference.sh prog.py
#
# (docs/compat.md, "Tile operations and math": the typing of Python float
# literals was read this way.) TileLang's kernels need a GPU to run.
set -eu
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
if [ ! -f .tl-ref/.stamp ]; then
  rm -rf .tl-ref
  "$PY" -m pip install --quiet --disable-pip-version-check --no-deps --target .tl-ref \
    -r requirements/tilelang-reference.txt
  touch .tl-ref/.stamp
fi
PYTHONPATH=.tl-ref exec "$PY" "$@"
