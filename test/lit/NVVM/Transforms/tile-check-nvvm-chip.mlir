// RUN: tile-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(gpu.module(tile-check-nvvm-chip))'

// mbarrier.try_wait has no RequiresSM trait; LLVM's instruction selection
// aborts on it for sm_80. test_wait is there from sm_80.
module attributes {gpu.container_module} {
  gpu.module @k [#nvvm.target<chip = "sm_80", features = "+ptx80">] {
    llvm.func @f(%p: !llvm.ptr<3>, %ph: i32) attributes {nvvm.kernel} {
      %a = nvvm.mbarrier.test.wait %p, %ph : !llvm.ptr<3>, i32 -> i1
      nvvm.fence.proxy {kind = #nvvm.proxy_kind<alias>}
      // expected-error @+1 {{nvvm.mbarrier.try_wait needs sm_90 or newer, but the kernel is compiled for sm_80: the tile operation at this location has no lowering for sm_80}}
      %b = nvvm.mbarrier.try_wait %p, %ph : !llvm.ptr<3>, i32 -> i1
      llvm.return
    }
  }
}

// -----

// setmaxregister needs the arch-specific target: sm_90 is not enough.
module attributes {gpu.container_module} {
  gpu.module @k [#nvvm.target<chip = "sm_90", features = "+ptx81">] {
    llvm.func @f(%p: !llvm.ptr<3>, %ph: i32) attributes {nvvm.kernel} {
      %b = nvvm.mbarrier.try_wait %p, %ph : !llvm.ptr<3>, i32 -> i1
      // expected-error @+1 {{nvvm.setmaxregister needs sm_90a, but the kernel is compiled for sm_90}}
      nvvm.setmaxregister increase 240
      llvm.return
    }
  }
}

// -----

// The async-proxy fence and the transaction count need sm_90.
module attributes {gpu.container_module} {
  gpu.module @k [#nvvm.target<chip = "sm_86", features = "+ptx80">] {
    llvm.func @f() attributes {nvvm.kernel} {
      // expected-error @+1 {{nvvm.fence.proxy needs sm_90 or newer, but the kernel is compiled for sm_86}}
      nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
      llvm.return
    }
  }
}

// -----

// The cluster special registers need sm_90 (cluster.nctarank has no trait).
module attributes {gpu.container_module} {
  gpu.module @k [#nvvm.target<chip = "sm_80", features = "+ptx80">] {
    llvm.func @f() attributes {nvvm.kernel} {
      // expected-error @+1 {{nvvm.read.ptx.sreg.cluster.nctarank needs sm_90 or newer, but the kernel is compiled for sm_80}}
      %n = nvvm.read.ptx.sreg.cluster.nctarank : i32
      llvm.return
    }
  }
}

// -----

// Everything the Hopper target has passes there.
module attributes {gpu.container_module} {
  gpu.module @k [#nvvm.target<chip = "sm_90a", features = "+ptx81">] {
    llvm.func @f(%p: !llvm.ptr<3>, %ph: i32) attributes {nvvm.kernel} {
      %b = nvvm.mbarrier.try_wait %p, %ph : !llvm.ptr<3>, i32 -> i1
      nvvm.setmaxregister increase 240
      nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
      nvvm.fence.mbarrier.init
      llvm.return
    }
  }
}

// -----

// A chip LLVM does not know (its instruction selection aborts on any
// intrinsic then): refused.
// expected-error @+2 {{the NVVM target's chip must be one of}}
module attributes {gpu.container_module} {
  gpu.module @k [#nvvm.target<chip = "gfx942", features = "+ptx80">] {
    llvm.func @f() attributes {nvvm.kernel} {
      llvm.return
    }
  }
}

// -----

// Turing (sm_75): f16 mma.sync m16n8k8 and ldmatrix are there; cp.async is
// Ampere's.
module attributes {gpu.container_module} {
  gpu.module @k [#nvvm.target<chip = "sm_75", features = "+ptx80">] {
    llvm.func @f(%a: vector<2xf16>, %c: f32, %dst: !llvm.ptr<3>, %src: !llvm.ptr<1>) attributes {nvvm.kernel} {
      %d = nvvm.mma.sync A[%a, %a] B[%a] C[%c, %c, %c, %c] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 8>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
      // expected-error @+1 {{nvvm.cp.async.shared.global needs sm_80 or newer, but the kernel is compiled for sm_75}}
      nvvm.cp.async.shared.global %dst, %src, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
      llvm.return
    }
  }
}

// -----

// Turing has no f16 m16n8k16 (nor bf16, tf32 or m16n8kN integer forms).
module attributes {gpu.container_module} {
  gpu.module @k [#nvvm.target<chip = "sm_75", features = "+ptx80">] {
    llvm.func @f(%a: vector<2xf16>, %c: f32) attributes {nvvm.kernel} {
      // expected-error @+1 {{nvvm.mma.sync needs sm_80 or newer, but the kernel is compiled for sm_75}}
      %d = nvvm.mma.sync A[%a, %a, %a, %a] B[%a, %a] C[%c, %c, %c, %c] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
      llvm.return
    }
  }
}
