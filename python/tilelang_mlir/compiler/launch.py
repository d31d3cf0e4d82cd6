"""The launch of a GPU kernel, read off the host function's
`gpu.launch_func`: the grid as expressions over symbolic sizes and scalar
arguments (base/grid.py), the block, the dynamic shared memory and the TMA
tensor maps. Target-neutral: the CUDA and ROCm backends both use it.
"""

from __future__ import annotations

from typing import Dict, List

from ..base.artifact import Launch
from ..base.errors import CompilationError, TileLangError
from ..base.signature import dim_grid_expr
from .pipeline import source_location

_GRID_OPS = {
    "arith.addi": "add", "arith.subi": "sub", "arith.muli": "mul",
    "arith.divui": "floordiv", "arith.divsi": "floordiv", "arith.floordivsi": "floordiv",
    "arith.ceildivsi": "ceildiv", "arith.ceildivui": "ceildiv", "arith.remui": "mod",
    "arith.remsi": "mod", "arith.maxsi": "max", "arith.maxui": "max", "arith.minsi": "min",
    "arith.minui": "min",
}


def _expression(value, func, params) -> dict:
    """The JSON expression of a host index value (grid extents)."""
    from .. import ir

    owner = value.owner
    if isinstance(owner, ir.Block):
        arg = ir.BlockArgument(value)
        p = params[arg.arg_number]
        if p.kind != "scalar" or not p.dtype.is_int:
            raise TileLangError(f"the grid depends on argument {p.name!r}, which is not an "
                                "integer scalar")
        return {"scalar": p.name}
    op = owner.operation if hasattr(owner, "operation") else owner
    name = op.name
    if name == "arith.constant":
        return {"const": int(ir.IntegerAttr(op.attributes["value"]).value)}
    if name in ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui",
                "arith.trunci"):
        return _expression(op.operands[0], func, params)
    if name == "memref.dim":
        src, idx = op.operands[0], op.operands[1]
        if not isinstance(src.owner, ir.Block):
            raise TileLangError("the grid depends on the size of a non-argument buffer")
        p = params[ir.BlockArgument(src).arg_number]
        d = _expression(idx, func, params)
        if "const" not in d:
            raise TileLangError("the grid depends on a dynamic dimension index")
        try:
            return dim_grid_expr(p.shape[d["const"]])
        except ValueError as e:
            raise TileLangError(f"the grid depends on the size of {p.name!r}: {e}") from None
    if name in _GRID_OPS:
        return {"op": _GRID_OPS[name],
                "args": [_expression(o, func, params) for o in op.operands]}
    raise TileLangError(f"the grid is computed with {name}, which the runtime cannot "
                        "evaluate", source_location(op.location))


def _int_attr(attr, what: str) -> int:
    from .. import ir

    if not isinstance(attr, ir.IntegerAttr):
        raise CompilationError(f"{what} must be an integer attribute, got {attr}")
    return int(attr.value)


def extract_tensormaps(launch, params) -> List[Dict]:
    """The TMA tensor maps of a `gpu.launch_func`: its `tile.tensormaps`
    attribute, an array of dictionaries `{param = <i64: index of a tensor
    parameter>, box = array<i64: extents, outermost first>, swizzle = <i64:
    0, 32, 64 or 128>}`, one per 128-byte tensor-map parameter the kernel
    takes before the user's parameters, in that order. [] without the
    attribute."""
    from .. import ir
    from ..runtime.cuda import check_tensormaps

    if "tile.tensormaps" not in launch.attributes:
        return []
    attr = launch.attributes["tile.tensormaps"]
    if not isinstance(attr, ir.ArrayAttr):
        raise CompilationError(f"tile.tensormaps must be an array of dictionaries, got {attr}")
    maps = []
    for i, entry in enumerate(attr):
        what = f"tile.tensormaps[{i}]"
        if not isinstance(entry, ir.DictAttr) or any(
                k not in entry for k in ("param", "box", "swizzle")) or len(entry) != 3:
            raise CompilationError(f"{what} must be a dictionary with exactly the keys param, "
                                   f"box and swizzle, got {entry}")
        box = entry["box"]
        if isinstance(box, (ir.DenseI64ArrayAttr, ir.DenseI32ArrayAttr)):
            box = [int(b) for b in box]
        elif isinstance(box, ir.ArrayAttr):
            box = [_int_attr(b, f"{what}.box") for b in box]
        else:
            raise CompilationError(f"{what}.box must be an array of integers, got {box}")
        maps.append({"param": _int_attr(entry["param"], f"{what}.param"), "box": box,
                     "swizzle": _int_attr(entry["swizzle"], f"{what}.swizzle")})
    kernel = launch.attributes["kernel"]
    name = kernel.value[-1] if isinstance(kernel, ir.SymbolRefAttr) else str(kernel)
    try:
        return check_tensormaps(maps, params, name)
    except ValueError as e:
        raise CompilationError(f"tile.tensormaps is inconsistent with the parameters: "
                               f"{e}") from None


def extract_launch(module, params) -> Dict:
    """Grid expressions, block, dynamic shared memory and TMA tensor maps of
    the launch (see `extract_tensormaps`).

    Only the grid, block and shared-memory operands are read: the kernel
    operands start with one placeholder per tensor map (the runtime passes
    the encoded maps there) before the user's arguments.
    """
    from .. import ir

    launches = []
    for op in module.body.operations:
        if op.operation.name != "func.func":
            continue

        def visit(inner):
            if inner.name == "gpu.launch_func":
                launches.append(inner)
            return ir.WalkResult.ADVANCE

        op.operation.walk(visit)
    if len(launches) != 1:
        raise CompilationError(f"expected one kernel launch, found {len(launches)}")
    launch = launches[0]
    operands = list(launch.operands)
    grid = [_expression(v, None, params) for v in operands[0:3]]
    if "tile.persistent" in launch.attributes:
        # A persistent kernel loops over `tiles` blocks' worth of tiles with
        # whatever grid it gets: one block per multiprocessor of the device,
        # a multiple of the cluster size `blocks`.
        attr = launch.attributes["tile.persistent"]
        if not isinstance(attr, ir.DictAttr) or "blocks" not in attr or "tiles" not in attr:
            raise CompilationError(f"tile.persistent must be a dictionary with the keys blocks "
                                   f"and tiles, got {attr}")
        blocks = _int_attr(attr["blocks"], "tile.persistent.blocks")
        tiles = _int_attr(attr["tiles"], "tile.persistent.tiles")
        grid[0] = {"op": "min", "args": [{"const": tiles}, {"sms": blocks}]}
    block = [_expression(v, None, params) for v in operands[3:6]]
    smem = _expression(operands[6], None, params)
    if any("const" not in b for b in block) or "const" not in smem:
        raise CompilationError("the block size and shared memory must be constants")
    return {"grid": grid, "block": [b["const"] for b in block], "shared_bytes": smem["const"],
            "tensormaps": extract_tensormaps(launch, params)}


def launch_of(entry: str, launch: Dict) -> Launch:
    """The `Launch` of what `extract_launch` read and the kernel's entry."""
    return Launch.of(entry, launch["grid"], launch["block"], launch["shared_bytes"],
                     launch.get("tensormaps", ()))
