"""Pure-Python models of the hardware, no GPU needed: :mod:`fragments` (mma.sync register
fragments), :mod:`layout` (shared-memory tiles and the TMA swizzle), :mod:`tensor_map` (the rules of
``cuTensorMapEncodeTiled``), :mod:`descriptors` (wgmma shared-memory descriptors and canonical
layouts), :mod:`pipeline` (chapter 05's mbarrier ring as a discrete-event model), :mod:`tcgen05` (sm_100 instruction and
shared-memory descriptors), :mod:`ordering` (chapter 08's ordering checker: proxies, bulk and wgmma groups,
warp leaders, mbarrier init), :mod:`tmem` (Tensor Memory: allocation, lane access, accumulator layouts,
``tcgen05.ld`` fragments), :mod:`emulate` (a tcgen05 GEMM tile run through these models on the CPU)."""
