"""Attention kernels: tile programs, their tuned configurations, the host
wrappers that chain several kernels, and PyTorch references.

- `flash_attn`: FlashAttention forward (`flash_attn`, CONFIGS, the Hopper
  PASS_CONFIGS, `reference`).
- `flash_attn_bwd`: the backward pass (`preprocess`, `flash_attn_bwd`,
  `postprocess`, the `FlashAttnBwd` wrapper, `reference`, `forward`).
- `flash_attn_varlen`: variable-length forward on packed sequences;
  `flash_attn_varlen_bwd` its backward (`FlashAttnVarlenBwd`, `reference`).
- `flash_decode`: split-KV decoding over a contiguous or paged cache
  (`flash_decode_split`, the `FlashDecode` wrapper).
- `mla_decode`: DeepSeek MLA decoding (`mla_decode_split`,
  `mla_decode_combine`, the `MlaDecode` wrapper); `mla_decode_roles` the
  same with explicit warpgroup roles (`MlaDecodeRoles`, and
  `MlaDecodeSeesaw`, FlashMLA's schedule).
- `online_softmax`: the pieces they share (one KV tile of the online
  softmax, the final normalization, the split-KV combine kernel).

The programs are the ones `examples/attention/*.py` compile and run.
"""
