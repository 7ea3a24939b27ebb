"""What would measure each part of chapter 10 that the course has not measured yet — the suite
and its defines where one exists, the experiment no suite runs where none does (chapter 10's issue,
item 2: "not measured yet", never a guess). Checked on the CPU for the two the issue names: the FP8
builds under a 64-, 32-byte and no swizzle (fp8_config(cluster=1, tma_store=False, swizzle=s))
compile for sm_90a (168 registers, no spills) and are in the fp8 suites (fp8.swizzle_configs), and
the TMA copy with CSTAGES=2 compiles."""

NCU_MMA_SYNC = ("Nsight Compute on chapter 01's kernel at 4096³ — `ncu --clock-control none --section "
                "SpeedOfLight -k gemm_mma_sync -c 1 python tools/profile_mma_sync.py` (DRAM and L1 "
                "throughput as % of peak) — written to a record; no suite records it today")
LATENCY_GLOBAL = ("no suite: a pointer chase of dependent global loads timed with clock64 (one "
                  "warp, L2 flushed) — the course has no latency microbenchmark")
LATENCY_SHARED = ("no suite: a pointer chase of dependent ld.shared timed with clock64 — the course "
                  "has no latency microbenchmark")
TMA_EQUAL_IN_FLIGHT = ("the tma_equal suite (asynctc.tma.equal_bytes.measure_equal_bytes; `python "
                       "tools/gpu_ch02_ch03.py --equal-bytes --record`): TMA, cp.async and ld+st "
                       "copies of fp16 boxes 16×16 to 128×128 at the same bytes in flight per SM "
                       "(shared memory held, and loads outstanding; tma.cu's copy kernels at "
                       "CSTAGES=2, as in chapter 03's tma_copy), each checked byte for byte before "
                       "it is timed; the claims code judges it as soon as the record exists")
SOFTWARE_SWIZZLE = ("no suite: the manual copy (tma.cu copy_ldg_sts) storing the 128-byte XOR "
                    "pattern itself, timed beside a TMA load with CU_TENSOR_MAP_SWIZZLE_128B; the "
                    "course's copies store unswizzled tiles")
FP8_SWIZZLE = ("`python tools/gpu_ch07.py --swizzle --record` (the fp8_swizzle suite, "
               "asynctc.fp8.measure_fp8_swizzle; or the full fp8 suite, which times them too): "
               "fp8_config(cluster=1, tma_store=False, swizzle=s) for s = 128, 64, 32, 0 "
               "(fp8.swizzle_config; warp_specialization.cu DT=2, SWIZZLE=s, CLUSTER=1: a swizzle "
               "other than 128 is built without clusters), float64-checked, then timed beside our "
               "fp16 top rung in the same run — built and dry-run, not yet run on the GPU")
BLACKWELL_RUN = ("chapter 09's tcgen05 suite (`python -m asynctc record tcgen05`) on a compute "
                 "capability 10.0 GPU, timed with the SM clock measured (time_gpu clock=True) for the "
                 "fraction at the measured clock — this machine's records are Hopper's")
