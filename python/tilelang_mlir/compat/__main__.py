"""`python -m tilelang_mlir.compat prog.py [args...]`: runs a TileLang
program as `__main__` with the `tilelang` module names served by this
package (`tilelang_mlir.compat.install()`)."""

import os
import runpy
import sys

from . import install


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m tilelang_mlir.compat PROGRAM.py [ARGS...]\n"
              "Runs a TileLang program with `import tilelang` served by tilelang-mlir.",
              file=sys.stderr)
        return 0 if argv else 2
    program = argv[0]
    if not os.path.isfile(program):
        print(f"tilelang_mlir.compat: no such file: {program}", file=sys.stderr)
        return 2
    force = os.environ.get("TILELANG_MLIR_COMPAT_FORCE", "") not in ("", "0")
    install(force=force)
    sys.argv = [program] + argv[1:]
    # As `python prog.py` does: the program's folder first, for its sibling imports.
    sys.path.insert(0, os.path.dirname(os.path.abspath(program)))
    runpy.run_path(program, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
