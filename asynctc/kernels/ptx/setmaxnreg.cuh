// setmaxnreg (PTX ISA: "Miscellaneous Instructions: setmaxnreg"): a warpgroup raises (.inc) or
// lowers (.dec) its per-thread register budget to an immediate in 24..256, a multiple of 8.
// ptxas needs the register count at kernel entry to honour it: without __launch_bounds__(threads, 1)
// (.maxntid + .minnctapersm) it prints "(C7508) Potential Performance Loss: 'setmaxnreg' ignored;
// unable to determine register count at entry" and emits no USETMAXREG (measured here with NVRTC).
#pragma once
#include "ptx/common.cuh"

template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs) : "memory");
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs) : "memory");
}
