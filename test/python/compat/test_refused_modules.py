"""Out-of-scope modules import; their names refuse at their use
(compat/refused_module.py). A kernel library imports all of its modules:
one TVM import at the top of an opt-in module (TileOPs' tracing imports
`tvm.tirx.stmt_functor`) must not end the import of every kernel. Each use
raises the module's refusal, naming its rule; a name no release has still
fails at the import. Runs in a subprocess (it installs the `tilelang` and
`tvm` names)."""

import subprocess
import sys

CODE = r'''
import tilelang_mlir.compat as compat
compat.install(force=True)
import tilelang
from tvm.tirx.stmt_functor import ir_transform, post_order_visit
import tvm.tir.transform as tir_transform
from tvm.ir import PrimExpr
import tvm, tvm.arith
from tilelang_mlir.compat.tvm_tir import PrimExpr as Ours

def refused(fn, *args):
    try:
        fn(*args)
    except ImportError as e:
        assert "(out of scope: TVM's IR and pass APIs)" in str(e), str(e)
        return str(e)
    raise SystemExit(f"{fn!r} ran")

assert PrimExpr is Ours  # served
assert "tvm.tirx.stmt_functor.ir_transform" in refused(ir_transform, None, None, None)
assert "tvm.tir.transform.Simplify" in refused(tir_transform.Simplify)
assert "tvm.arith.Analyzer" in refused(tvm.arith.Analyzer)
assert "tvm.ir.IRModule.from_expr" in refused(tvm.ir.IRModule.from_expr, None)

class Visitor(post_order_visit):  # a class may derive from one; its instances refuse
    pass

refused(Visitor)
assert not isinstance(1.0, post_order_visit)

@tilelang.jit(target="cpu")        # and the library's kernels compile and run
def double(N):
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=N):
            for i in T.Parallel(N):
                B[i] = A[i] * 2
    return main

import torch
a = torch.randn(32)
b = torch.empty(32)
double(32)(a, b)
assert torch.equal(b, a * 2)

for name in ("tvm.tir.no_such_module", "tvm.no_such_package", "tilelang.no_such_module"):
    try:
        __import__(name)
        raise SystemExit(f"{name} imported")
    except ImportError:
        pass
try:
    from tvm.tir import no_such_name
    raise SystemExit("tvm.tir.no_such_name imported")
except ImportError as e:
    assert "no_such_name" in str(e)
print("DEFERRED OK")
'''


def test_out_of_scope_modules_refuse_at_use(tmp_path):
    script = tmp_path / "deferred_check.py"  # tile programs are read from their file
    script.write_text(CODE)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert proc.returncode == 0 and "DEFERRED OK" in proc.stdout, proc.stdout + proc.stderr


def test_prim_func_signature_as_tvm_reads_it():
    """TileOPs' autotuner reads a program's integer tensor inputs through
    TVM's PrimFunc.params and buffer_map; the IR members are refused."""
    import pytest

    import tilelang_mlir.language as T

    @T.prim_func
    def main(X: T.Tensor((64, 32), "float16"), Idx: T.Tensor((64,), "int32"), n: T.int32):
        with T.Kernel(1, threads=32):
            X[0, 0] = Idx[0] + n

    ints = [p.name for p in main.params if (b := main.buffer_map.get(p)) is not None
            and "int" in str(b.dtype)]
    assert ints == ["Idx"]
    assert main.buffer_map[main.params[0]].shape == (64, 32)
    assert main.params[2] not in main.buffer_map  # a scalar has no buffer
    with pytest.raises(AttributeError, match=r"PrimFunc.body .*out of scope: TVM's IR"):
        main.body
    with pytest.raises(AttributeError, match="no attribute 'no_such_member'"):
        main.no_such_member

    # A table of T.ptr addresses is an int64 buffer, as TileLang lowers it.
    @T.prim_func
    def table(ptrs: T.Tensor((4,), T.ptr), out: T.Tensor((4, 8), "float16")):
        with T.Kernel(4, threads=1) as bx:
            src = T.make_tensor(ptrs[bx], (8,), "float16")
            for i in T.serial(8):
                out[bx, i] = src[i]

    assert table.buffer_map[table.params[0]].dtype == "int64"
    assert [int(d) for d in table.buffer_map[table.params[0]].shape] == [4]
