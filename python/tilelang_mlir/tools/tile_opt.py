"""The `tile-opt` console command of an installed wheel."""

import os
import sys


def binary_path() -> str:
    return os.path.join(os.path.dirname(os.path.dirname(__file__)), "bin", "tile-opt")


def main() -> None:
    path = binary_path()
    if not os.path.exists(path):
        raise SystemExit(f"tile-opt is not installed with this package ({path} is missing)")
    os.execv(path, [path] + sys.argv[1:])


if __name__ == "__main__":
    main()
