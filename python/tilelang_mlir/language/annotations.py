"""Annotations and debugging aids."""

from __future__ import annotations

from ._builtin import builtin


@builtin
def use_swizzle(b, panel_size: int = 8, order: str = "row", enable: bool = True):
    """Rasterizes blocks in panels of `panel_size` for L2 reuse."""
    b.use_swizzle(panel_size, order, enable)


@builtin
def no_set_max_nreg(b):
    """TileLang's annotation: where this kernel is warp-specialized, its
    producer and consumer warpgroups keep the registers they start with
    (no setmaxnreg reallocation)."""
    b.no_set_max_nreg()


@builtin
def disable_warp_group_reg_alloc(b):
    """The same as T.no_set_max_nreg (TileLang's other name for it)."""
    b.no_set_max_nreg()


@builtin
def annotate_layout(b, layout_map: dict):
    """Forces layouts: {fragment: T.Fragment(...) or attribute,
    shared buffer: T.make_swizzled_layout(buf), global tensor: T.Layout(...)
    (where this kernel stores its elements)}."""
    b.annotate_layout(layout_map)


def annotate_restrict_buffers(*buffers):
    """T.annotate_restrict_buffers(x, y, ...): TileLang's note that these
    tensor arguments may alias (its CUDA code then drops `__restrict__` on
    them). This compiler never assumes that arguments do not alias, so the
    note holds already; the arguments must be buffers."""
    from .values import Buffer

    for buf in buffers:
        if not isinstance(buf, Buffer):
            raise TypeError(f"annotate_restrict_buffers expects Buffer arguments, got "
                            f"{type(buf).__name__}")


@builtin
def print(b, value, msg: str = ""):  # noqa: A001 (TileLang's name)
    """Prints a value or a tile with the block that printed it."""
    b.print(value, msg)


@builtin
def device_assert(b, cond, msg: str = ""):
    """Stops the kernel when `cond` is false, reporting `msg` (default: the
    source line) with its file, line and block. CPU: the kernel call raises
    tl.DeviceAssertionError; CUDA: `__assertfail` (the launch fails with an
    assertion error); ROCm: a trap, without the message."""
    b.device_assert(cond, msg)


@builtin
def annotate_pass_configs(b, configs: dict):
    """Pass configs of this program (`{PassConfigKey.X: value}` or
    `{"tl.x": value}`), merged under those the compile is given (the
    compile's win); anywhere in the program's body."""
    if not isinstance(configs, dict):
        raise b.error(f"T.annotate_pass_configs takes a dict, got {configs!r}")
    b.function_pass_configs.update(configs)


@builtin
def annotate_compile_flags(b, flags):
    """TileLang's nvcc flags for this program (a list or one string): the
    same as `tilelang.compile(..., compile_flags=flags)` (the flags that only
    steer C++ compilation are accepted; tilelang-mlir emits PTX itself)."""
    if isinstance(flags, str):
        flags = flags.split()
    if not isinstance(flags, (list, tuple)) or not all(isinstance(f, str) for f in flags):
        raise b.error(f"T.annotate_compile_flags takes a list of strings, got {flags!r}")
    b.function_compile_flags.extend(flags)


class SwizzleLayout:
    def __init__(self, bytes_: int, pad: int = 0):
        self.bytes, self.pad = bytes_, pad

    def to_attr(self, buf):
        from .. import ir

        text = f"#tile.swizzle<{self.bytes}" + (f", pad = {self.pad}" if self.pad else "") + ">"
        return ir.Attribute.parse(text)


def make_swizzled_layout(buffer, swizzle_bytes: int = 128) -> SwizzleLayout:
    """A shared-memory layout with the given swizzle span (128 bytes by
    default, what TMA and wgmma read best)."""
    return SwizzleLayout(swizzle_bytes)


def make_padded_layout(buffer, pad: int) -> SwizzleLayout:
    """A shared-memory layout that pads every row by `pad` elements."""
    return SwizzleLayout(0, pad)


@builtin
def annotate_safe_value(b, safe_value_map: dict):
    """{tensor: value}: an out-of-range element read of a global tensor
    gives `value` instead of zero (element loads, and T.copy out of it),
    from here to the end of the kernel. Out-of-range element reads and
    writes of global tensors are bounds-safe on every target: a read gives
    the safe value, a write is dropped (pass config
    `tl.disable_safe_memory_legalize` turns the checks off)."""
    b.annotate_safe_value(safe_value_map)
