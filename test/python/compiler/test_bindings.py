"""The embedded MLIR bindings with the tile dialect: build, print, verify,
run passes, and turn bad IR into Python errors rather than crashes."""

import pytest

from tilelang_mlir import ir
from tilelang_mlir.dialects import arith, func, tile
from tilelang_mlir.passmanager import PassManager


def _build_gemm_kernel():
    f16, f32 = ir.F16Type.get(), ir.F32Type.get()
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        glob = tile.buffer_type([64, 64], f16)

        @func.FuncOp.from_py_func(glob, glob)
        def gemm(a_global, b_global):
            one = arith.constant(ir.IndexType.get(), 1)
            kernel = tile.kernel([one], [128])
            with ir.InsertionPoint.at_block_terminator(kernel.body.blocks[0]):
                a = tile.AllocSharedOp(tile.buffer_type([64, 32], f16, "shared")).result
                b = tile.AllocSharedOp(tile.buffer_type([64, 32], f16, "shared")).result
                c = tile.AllocFragmentOp(tile.buffer_type([64, 64], f32, "fragment")).result
                tile.GemmOp(a, b, c, transpose_b=True,
                            policy=ir.Attribute.parse("#tile.policy<full_col>"))
    return module


def test_build_and_print_gemm_kernel():
    with ir.Context(), ir.Location.unknown():
        module = _build_gemm_kernel()
        assert module.operation.verify()
        text = str(module)
        assert "tile.kernel blocks(%" in text and "threads(128)" in text
        assert "tile.gemm" in text and "transpose_b" in text
        assert "#tile.policy<full_col>" in text
        assert "memref<64x64xf32, #tile.scope<fragment>>" in text
        # The printed IR parses back to the same text.
        assert str(ir.Module.parse(text)) == text


def test_generated_op_classes_expose_attributes():
    with ir.Context(), ir.Location.unknown():
        module = _build_gemm_kernel()
        gemms = []

        def collect(op):
            if op.name == "tile.gemm":
                gemms.append(op.opview)
            return ir.WalkResult.ADVANCE

        module.operation.walk(collect)
        assert len(gemms) == 1
        gemm = gemms[0]
        assert isinstance(gemm, tile.GemmOp)
        assert gemm.transpose_b and not gemm.transpose_a
        assert str(gemm.policy) == "#tile.policy<full_col>"


def test_verifier_error_is_a_python_exception():
    with ir.Context(), ir.Location.unknown():
        f16, f32 = ir.F16Type.get(), ir.F32Type.get()
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            @func.FuncOp.from_py_func()
            def bad():
                one = arith.constant(ir.IndexType.get(), 1)
                kernel = tile.kernel([one], [128])
                with ir.InsertionPoint.at_block_terminator(kernel.body.blocks[0]):
                    a = tile.AllocSharedOp(tile.buffer_type([64, 32], f16, "shared")).result
                    b = tile.AllocSharedOp(tile.buffer_type([64, 64], f16, "shared")).result
                    c = tile.AllocFragmentOp(tile.buffer_type([64, 64], f32, "fragment")).result
                    tile.GemmOp(a, b, c)
        with pytest.raises(ir.MLIRError, match="the K dimensions 32 and 64 differ"):
            module.operation.verify()


def test_malformed_ir_is_a_python_exception():
    with ir.Context():
        with pytest.raises(ir.MLIRError, match="expects 1 to 3 grid dimensions"):
            ir.Module.parse(
                "func.func @f(%n: index) {\n"
                "  tile.kernel blocks(%a, %b, %c, %d) in (%n, %n, %n, %n) threads(32) {\n"
                "  }\n  return\n}")
        with pytest.raises(ir.MLIRError):
            ir.Module.parse("tile.kernel blocks(")


def test_scope_helpers_reject_unknown_scopes():
    with ir.Context():
        assert str(tile.scope_attr("shared")) == "#tile.scope<shared>"
        with pytest.raises(ValueError, match="unknown tile scope 'register'"):
            tile.scope_attr("register")


def test_passes_are_registered():
    with ir.Context(), ir.Location.unknown():
        module = _build_gemm_kernel()
        pm = PassManager.parse("builtin.module(convert-tile-to-scf,canonicalize)")
        pm.run(module.operation)
        assert "tile." not in str(module)
        # Upstream passes our pipelines use are registered too.
        PassManager.parse("builtin.module(convert-scf-to-cf,convert-to-llvm,reconcile-unrealized-casts)")


def test_tile_opt_runs_from_the_package(tmp_path):
    """`tile-opt` of an installed package is the driver inside the native
    library (python -m tilelang_mlir.tools.tile_opt): it parses, runs a pass
    pipeline and reports errors with a non-zero exit code."""
    import subprocess
    import sys

    src = tmp_path / "k.mlir"
    src.write_text(
        "func.func @f(%n: index) {\n"
        "  %c2 = arith.constant 2 : index\n"
        "  tile.kernel blocks(%bx) in (%n) threads(128) {\n"
        "    %s = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>\n"
        "  }\n"
        "  return\n"
        "}\n")
    cmd = [sys.executable, "-m", "tilelang_mlir.tools.tile_opt"]
    out = subprocess.run(cmd + [str(src), "--pass-pipeline=builtin.module(func.func(tile-layout-inference))"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "tile.alloc_shared {swizzle = #tile.swizzle<128>}" in out.stdout
    bad = subprocess.run(cmd + ["-"], input="func.func @f() { tile.nope }", capture_output=True,
                         text=True)
    assert bad.returncode != 0 and "tile.nope" in bad.stderr
    listed = subprocess.run(cmd + ["--help"], capture_output=True, text=True)
    assert listed.returncode == 0 and "tile-warp-specialize" in listed.stdout
