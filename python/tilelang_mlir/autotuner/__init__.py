"""`@tl.autotune`: pick the fastest correct configuration of a kernel factory.

    @tl.autotune(configs=[dict(block_M=128, block_N=256, block_K=64, num_stages=3, threads=256),
                          dict(block_M=128, block_N=128, block_K=32, num_stages=3, threads=128)],
                 warmup=5, rep=20, ref_prog=lambda A, B: A @ B, rtol=1e-2, atol=1e-2)
    @tl.jit(out_idx=[2])
    def matmul(M, N, K, block_M=128, block_N=128, block_K=32, num_stages=3, threads=128):
        ...
        return main

    kernel = matmul(4096, 4096, 4096)   # tunes (or finds the winner on disk): the best kernel
    kernel.autotune_result              # best config and time, every timing, what was skipped

Each call with new arguments (a new shape):

1. builds every config's program here (the factory called with the call's
   arguments plus the config) and emits its tile IR, then compiles them in
   worker processes started by forkserver (spawn where there is none, never
   fork), at most `max_workers` at a time (default: one per CPU, at most one
   per config); the workers send back what the kernel is built from (and
   fill the disk kernel cache), this process builds the kernels. As with
   any worker started that way, they import the main module: a script that
   tunes when it is run needs `if __name__ == "__main__":`;
2. checks each against `ref_prog` on the same random inputs
   (`kernel.get_profiler().random_inputs()`, or `supply_prog`), with
   rtol/atol (or `manual_check_prog`);
3. times the correct ones one after the other here with the profiler's
   `do_bench` (on CUDA: device time of CUDA-graph replays, L2 flushed),
   the median of `rep` calls after `warmup`;
4. keeps the fastest, and writes it to `<kernel cache>/autotune/<key>.json`
   (with a sha256 of its contents; a file that fails its checks is deleted
   with a KernelCacheWarning and tuning runs again).

A config that does not compile, fails the check or fails to run is skipped;
its reason is logged ("tilelang_mlir.autotuner", INFO) and kept in the
result. Only when every config fails is that an error (`AutotuneError`,
listing every reason). The cache key covers the factory's source and
closure, the call's other arguments, the configs, out_idx and pass configs,
the target (with the GPU's name on CUDA) and the compiler build; a later call
with the same key, in this process or another, compiles (or loads) the
winner only. Why a kernel did not compile is kept too
(`<kernel cache>/autotune/failed/`), so that a machine without the compiler,
tuning from kernels compiled elsewhere, still says why. A progress bar (tqdm) shows the best time so far; without tqdm,
or with TILELANG_MLIR_AUTOTUNE_QUIET=1, progress goes to the log only.
"""

from .tuner import AutoTuner, AutotuneError, AutotuneResult, autotune, cached_config  # noqa: F401

# The package is cache.py (winner records), pool.py (compile workers),
# progress.py, text.py (keys and reasons as text) and tuner.py (the decorator).
# The compat layer's `tilelang.autotuner` builds its keys and cache paths as
# this tuner does:
from .cache import _cache_root  # noqa: E402,F401
from .text import _argument_text, _factory_text, _value_text  # noqa: E402,F401

__all__ = ["autotune", "AutoTuner", "AutotuneResult", "AutotuneError"]
