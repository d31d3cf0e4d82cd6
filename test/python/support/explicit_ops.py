"""A small program for each operation of the explicit warp-specialization
layer (language/roles.py and the asynchronous gemm of language/gemm.py),
and, run as a script, the compile of each for one chip in a process of its
own (test_chip_ops.py): an LLVM abort then fails that test instead of
ending pytest.

    python explicit_ops.py sm_80   # one JSON line per program
"""

import json
import sys

import numpy as np

import tilelang_mlir as tl
import tilelang_mlir.language as T


def _barrier(alias):
    """B = reverse(2 A) through shared memory and an mbarrier every thread
    arrives on; `alias`: TileLang's other names of the two calls ("tx": the
    arrivals through T.mbarrier_arrive_expect_tx with no bytes)."""

    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((128,), "float32")
            bars = T.alloc_barrier([128, 128])
            for i in T.Parallel(128):
                s[i] = A[i] * 2.0
            if alias == "tx":
                T.mbarrier_arrive_expect_tx(bars[1], 0)
                T.mbarrier_wait_parity(bars[1], 0)
            elif alias:
                T.mbarrier_arrive(mbarrier=bars[1])
                T.mbarrier_wait_parity(mbarrier=bars[1], parity=0)
            else:
                T.barrier_arrive(bars[1])
                T.barrier_wait(bars[1], 0)
            for i in T.Parallel(128):
                B[i] = s[127 - i]

    return main


def barrier():
    return _barrier(False)


def mbarrier():
    return _barrier(True)


def mbarrier_arrive_expect_tx():
    return _barrier("tx")


def _copy_tile(how: str):
    """B = A (64 x 64) through a shared tile filled by a TMA copy on an
    mbarrier ("tma"), or by per-thread cp.async copies waited for as a
    group ("cp_async"; "cp_async_tvm": their addresses written with TVM's
    T.tvm_access_ptr, each under a predicate that holds) or arriving on an
    mbarrier ("cp_async_noinc")."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((64, 64), "float16")
            bar = T.alloc_barrier(arrive_count=128)
            tx = T.get_thread_binding()
            if how == "tma":
                T.tma_copy(A[0, 0], s, barrier=bar)
                T.barrier_arrive(bar)
            else:
                for r in T.serial(4):
                    row = r * 16 + tx // 8
                    col = tx % 8 * 8
                    if how == "cp_async_tvm":
                        f16 = T.type_annotation("float16")
                        T.ptx_cp_async(T.tvm_access_ptr(f16, s.data, row * 64 + col, 8, 2),
                                       T.tvm_access_ptr(f16, A.data, row * 64 + col, 8, 1), 8,
                                       predicate=row < 64)
                    else:
                        T.ptx_cp_async(T.access_ptr(s[row, col], "w", 8),
                                       T.access_ptr(A[row, col], "r", 8), 8)
                if how in ("cp_async", "cp_async_tvm"):
                    T.ptx_commit_group()
                    T.ptx_wait_group(0)
                    T.sync_threads()
                else:
                    T.cp_async_barrier_noinc(bar)
            if how not in ("cp_async", "cp_async_tvm"):
                T.barrier_wait(bar, 0)
            T.copy(s, B[0, 0])

    return main


def tma_copy():
    return _copy_tile("tma")


def cp_async():
    return _copy_tile("cp_async")


def cp_async_barrier_noinc():
    return _copy_tile("cp_async_noinc")


def cp_async_tvm():
    return _copy_tile("cp_async_tvm")


def set_max_nreg():
    @T.prim_func
    def main(A: T.Tensor((384,), "float32"), B: T.Tensor((384,), "float32")):
        with T.Kernel(1, threads=384) as bx:
            tx = T.get_thread_binding()
            if tx < 128:
                T.set_max_nreg(232, 1)
                for i in T.Parallel(128):
                    B[i] = A[i]
            elif tx < 256:
                T.inc_max_nreg(232)
                for i in T.Parallel(128):
                    B[i + 128] = A[i + 128]
            else:
                T.dec_max_nreg(40)
                for i in T.Parallel(128):
                    B[i + 256] = A[i + 256]

    return main


def fence_proxy_async():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((128,), "float32")
            for i in T.Parallel(128):
                s[i] = A[i]
            T.fence_proxy_async()
            T.sync_threads()
            for i in T.Parallel(128):
                B[i] = s[127 - i]

    return main


def named_barrier():
    @T.prim_func
    def main(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256) as bx:
            tx = T.get_thread_bindings()[0]
            s = T.alloc_shared((128,), "float32")
            if tx < 128:
                for i in T.Parallel(128):
                    s[i] = A[i]
                T.sync_threads(1, 128)
                for i in T.Parallel(128):
                    B[i] = s[127 - i]
            else:
                for i in T.Parallel(128):
                    B[i + 128] = A[i + 128]

    return main


def named_barrier_arrive():
    """The first 128 threads stage A in shared memory and arrive on barrier
    2 without waiting; the others wait on it, then read the stage."""
    @T.prim_func
    def main(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256) as bx:
            tx = T.get_thread_binding()
            s = T.alloc_shared((256,), "float32")
            if tx < 128:
                for i in T.Parallel(256):
                    s[i] = A[i]
                T.named_barrier_arrive(2, 256)
            else:
                T.sync_threads(2, 256)
                for i in T.Parallel(256):
                    B[i] = s[255 - i]

    return main


def wgmma_gemm():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"),
             C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((64, 64), "float16")
            Bs = T.alloc_shared((64, 64), "float16")
            Cl = T.alloc_fragment((64, 64), "float32")
            T.copy(A[0, 0], As)
            T.copy(B[0, 0], Bs)
            T.clear(Cl)
            T.wgmma_gemm(As, Bs, Cl)
            T.wait_wgmma(0)
            T.copy(Cl, C[0, 0])

    return main


def ws_roles():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=256) as bx:
            bar = T.alloc_barrier(arrive_count=128)
            s = T.alloc_shared((128,), "float32")
            with T.ws(1):
                for i in T.Parallel(128):
                    s[i] = A[i] + 1.0
                T.barrier_arrive(bar)
            with T.ws(0):
                T.barrier_wait(bar, 0)
                for i in T.Parallel(128):
                    B[i] = s[127 - i]

    return main


def _reverse(scale=1.0, shift=0.0):
    return lambda a: a[::-1] * scale + shift


def _ident(a):
    return a


def _halves(a):
    return np.concatenate([a[:128][::-1], a[128:]])


# Each program: its factory, the T.* names of the explicit layer it uses
# (the test checks that together they cover the layer), its inputs (shape,
# dtype) and its result as a function of them (NumPy).
PROGRAMS = {
    "barrier": (barrier, {"alloc_barrier", "barrier_arrive", "barrier_wait"},
                [((128,), "float32")], _reverse(2.0)),
    "mbarrier": (mbarrier, {"mbarrier_arrive", "mbarrier_wait_parity"},
                 [((128,), "float32")], _reverse(2.0)),
    "mbarrier_arrive_expect_tx": (mbarrier_arrive_expect_tx, {"mbarrier_arrive_expect_tx"},
                                  [((128,), "float32")], _reverse(2.0)),
    "tma_copy": (tma_copy, {"tma_copy"}, [((64, 64), "float16")], _ident),
    "set_max_nreg": (set_max_nreg, {"set_max_nreg", "inc_max_nreg", "dec_max_nreg",
                                    "get_thread_binding"}, [((384,), "float32")], _ident),
    "fence_proxy_async": (fence_proxy_async, {"fence_proxy_async", "sync_threads"},
                          [((128,), "float32")], _reverse()),
    "named_barrier": (named_barrier, {"sync_threads", "get_thread_bindings"},
                      [((256,), "float32")], _halves),
    "named_barrier_arrive": (named_barrier_arrive, {"named_barrier_arrive", "sync_threads"},
                             [((256,), "float32")], _reverse()),
    "cp_async": (cp_async, {"ptx_cp_async", "access_ptr", "ptx_commit_group", "ptx_wait_group"},
                 [((64, 64), "float16")], _ident),
    "cp_async_barrier_noinc": (cp_async_barrier_noinc, {"cp_async_barrier_noinc"},
                               [((64, 64), "float16")], _ident),
    "cp_async_tvm": (cp_async_tvm, {"ptx_cp_async", "tvm_access_ptr", "type_annotation"},
                     [((64, 64), "float16")], _ident),
    "wgmma_gemm": (wgmma_gemm, {"wgmma_gemm", "wait_wgmma"},
                   [((64, 64), "float16"), ((64, 64), "float16")],
                   lambda a, b: a.astype(np.float32) @ b.astype(np.float32)),
    "ws_roles": (ws_roles, {"ws"}, [((128,), "float32")], _reverse(1.0, 1.0)),
}


def compile_all(chip: str) -> None:
    """Compiles every program for `cuda:<chip>` (through ptxas); prints one
    JSON line per program: its name, "ok" or the error's class and text."""
    for name, (factory, *_) in PROGRAMS.items():
        try:
            tl.compile(factory(), target=f"cuda:{chip}", pass_configs={"tl.disable_cache": True})
            row = {"program": name, "result": "ok"}
        except Exception as e:  # reported to the test, which judges it
            row = {"program": name, "result": type(e).__name__, "message": str(e)}
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    compile_all(sys.argv[1])
