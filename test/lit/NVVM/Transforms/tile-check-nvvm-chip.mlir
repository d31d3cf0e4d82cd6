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
