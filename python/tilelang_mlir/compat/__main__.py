"""`python -m tilelang_mlir.compat [--cpu | --dry] prog.py [args...]`: runs a
TileLang program as `__main__` with the `tilelang` module names served by
this package (`tilelang_mlir.compat.install()`).

--cpu runs a program written for a CUDA GPU on the CPU target (its CUDA
tensors become CPU tensors); --dry compiles its kernels for sm_90a and stops
at the first launch (compat/emulate.py)."""

import os
import runpy
import sys

from . import install

USAGE = ("usage: python -m tilelang_mlir.compat [--cpu | --dry] PROGRAM.py [ARGS...]\n"
         "Runs a TileLang program with `import tilelang` served by tilelang-mlir.\n"
         "  --cpu  run kernels written for a CUDA GPU on the CPU target\n"
         "  --dry  compile kernels for sm_90a and stop at the first launch")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    emulation = None
    while argv and argv[0] in ("--cpu", "--dry"):
        emulation = argv.pop(0)[2:]
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr)
        return 0 if argv else 2
    program = argv[0]
    if not os.path.isfile(program):
        print(f"tilelang_mlir.compat: no such file: {program}", file=sys.stderr)
        return 2
    force = os.environ.get("TILELANG_MLIR_COMPAT_FORCE", "") not in ("", "0")
    install(force=force)
    from . import emulate

    if emulation == "cpu":
        emulate.cpu()
    elif emulation == "dry":
        emulate.dry()
    sys.argv = [program] + argv[1:]
    # As `python prog.py` does: the program's folder first, for its sibling imports.
    sys.path.insert(0, os.path.dirname(os.path.abspath(program)))
    try:
        runpy.run_path(program, run_name="__main__")
    except emulate.DryStop as e:
        print(f"tilelang_mlir.compat --dry: compiled; stopped at the first launch (kernel {e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
