"""`tilelang.cuda` and `tilelang.cuda.intrinsics`: only the sparse metadata
facts (`tilelang.cuda.intrinsics.sparse_layout`) are provided; TileLang's
CUDA intrinsic emitters generate TVM code and are not."""
