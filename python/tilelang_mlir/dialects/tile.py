"""Python bindings of the tile dialect: generated op classes plus sugar.

The generated classes (`KernelOp`, `CopyOp`, `GemmOp`, ...) take exactly the
ODS operands and attributes. The helpers below build what the generated
classes cannot do alone: scoped memref types and ops whose region needs
block arguments.
"""

from typing import Optional, Sequence

from .._mlir_libs._tile import register_dialects  # noqa: F401
from ..ir import (
    Attribute,
    Block,
    DenseI64ArrayAttr,
    IndexType,
    InsertionPoint,
    IntegerAttr,
    IntegerType,
    MemRefType,
    Type,
    Value,
)
from ._tile_enum_gen import *  # noqa: F401,F403
from ._tile_ops_gen import *  # noqa: F401,F403
from ._tile_ops_gen import KernelOp, ParallelOp, PipelinedOp, RoleOp, YieldOp

SCOPES = ("shared", "fragment", "local", "var")


def scope_attr(scope: str) -> Attribute:
    """The `#tile.scope<...>` memory-space attribute of a scope name."""
    if scope not in SCOPES:
        raise ValueError(f"unknown tile scope {scope!r}; expected one of {SCOPES}")
    return Attribute.parse(f"#tile.scope<{scope}>")


def buffer_type(shape: Sequence[int], element_type: Type, scope: Optional[str] = None) -> MemRefType:
    """A memref type for a tile buffer; `scope=None` means global memory."""
    space = scope_attr(scope) if scope else None
    return MemRefType.get(list(shape), element_type, memory_space=space)


def _body_with_terminator(op, num_args: int) -> Block:
    block = op.regions[0].blocks.append(*([IndexType.get()] * num_args))
    with InsertionPoint(block):
        YieldOp()
    return block


def kernel(grid: Sequence[Value], threads: Sequence[int], *, loc=None, ip=None) -> KernelOp:
    """Creates a `tile.kernel` whose body has one block index per grid
    dimension and ends with `tile.yield`; insert ops before the terminator:
    `InsertionPoint.at_block_terminator(op.body.blocks[0])`."""
    op = KernelOp(list(grid), DenseI64ArrayAttr.get(list(threads)), loc=loc, ip=ip)
    _body_with_terminator(op, len(grid))
    return op


def role(begin: int, end: int, *, loc=None, ip=None) -> RoleOp:
    """Creates a `tile.role` of threads [begin, end) with an empty body."""
    i64 = IntegerType.get_signless(64)
    op = RoleOp(IntegerAttr.get(i64, begin), IntegerAttr.get(i64, end), loc=loc, ip=ip)
    _body_with_terminator(op, 0)
    return op


def parallel(extents: Sequence[int], *, loc=None, ip=None) -> ParallelOp:
    """Creates a `tile.parallel` over `extents` with one induction variable
    per extent."""
    op = ParallelOp(DenseI64ArrayAttr.get(list(extents)), loc=loc, ip=ip)
    _body_with_terminator(op, len(extents))
    return op


def pipelined(lower: Value, upper: Value, step: Value, num_stages: int, *,
              order: Optional[Sequence[int]] = None,
              stage: Optional[Sequence[int]] = None,
              group: Optional[Sequence[Sequence[int]]] = None,
              loc=None, ip=None) -> PipelinedOp:
    """Creates a `tile.pipelined` loop with its induction variable."""
    i64 = IntegerType.get_signless(64)
    op = PipelinedOp(
        lower, upper, step, IntegerAttr.get(i64, num_stages),
        order=DenseI64ArrayAttr.get(list(order)) if order is not None else None,
        stage=DenseI64ArrayAttr.get(list(stage)) if stage is not None else None,
        group=Attribute.parse("[" + ", ".join(
            "array<i64: " + ", ".join(str(i) for i in g) + ">" for g in group) + "]")
        if group is not None else None,
        loc=loc, ip=ip)
    _body_with_terminator(op, 1)
    return op
