"""`tile-opt`: the optimizer driver (every tile dialect and pass registered).

Installed as a console command by the wheel; `python -m
tilelang_mlir.tools.tile_opt` works too. It runs the driver compiled into
the package's native library (no separate executable).
"""

import sys


def main(argv=None) -> None:
    from .._mlir_libs import _tile

    args = list(sys.argv if argv is None else argv)
    args[0] = "tile-opt"
    sys.stdout.flush()
    raise SystemExit(_tile.opt_main(args))


if __name__ == "__main__":
    main()
