"""Device assertions on the index tensors of the attention kernels, as
kernels of their own that `tilelang_mlir.ops` launches before the attention
kernel when the index tensors are on a GPU (CPU tensors are checked on the
host). They are not inside the attention kernels: a device assertion there
is a call, and ptxas serializes every wgmma of a kernel that holds a call
(C7510), which costs the sm_90a kernels their overlap of the two gemms.

- `check_offsets(batch, max_seqlen)`: cu_seqlens (batch + 1,) of the
  variable-length kernels starts at 0, does not decrease, ends at the
  number of tokens (a scalar argument) and has no sequence longer than
  max_seqlen.
- `check_pages(batch, max_pages, num_pages, page_size)`: every length of
  cache_seqlens (batch,) lies in [0, max_pages * page_size] and every page
  block_table (batch, max_pages) gives for a sequence's tokens lies in
  [0, num_pages); the entries past a sequence's end are not read.
"""

import tilelang_mlir.language as T


def check_offsets(batch, max_seqlen, threads=128):
    @T.prim_func
    def main(cu_seqlens: T.Tensor((batch + 1,), "int32"), total: T.int32):
        with T.Kernel(1, threads=threads):
            for b in T.Parallel(batch):
                start = cu_seqlens[b] + 0
                end = cu_seqlens[b + 1] + 0
                T.device_assert((b > 0) | (start == 0), "cu_seqlens[0] must be 0")
                T.device_assert(end >= start, "cu_seqlens must not decrease")
                T.device_assert(end <= total, "cu_seqlens: an offset past the number of tokens")
                T.device_assert(end - start <= max_seqlen,
                                f"cu_seqlens: a sequence longer than max_seqlen = {max_seqlen}")
                T.device_assert((b < batch - 1) | (end == total),
                                "cu_seqlens[batch] must be the number of tokens")

    return main


def check_pages(batch, max_pages, num_pages, page_size, threads=128):
    max_len = max_pages * page_size

    @T.prim_func
    def main(cache_seqlens: T.Tensor((batch,), "int32"),
             block_table: T.Tensor((batch, max_pages), "int32")):
        with T.Kernel(batch, threads=threads) as b:
            seqlen = cache_seqlens[b] + 0
            T.device_assert((seqlen >= 0) & (seqlen <= max_len),
                            f"cache_seqlens: a length outside [0, {max_len}] "
                            "(max_pages * page_size)")
            for i in T.Parallel(max_pages):
                if i * page_size < seqlen:
                    page = block_table[b, i] + 0
                    T.device_assert((page >= 0) & (page < num_pages),
                                    f"block_table: a page outside [0, {num_pages}) (num_pages)")

    return main
