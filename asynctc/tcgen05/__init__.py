"""Chapter 09's Blackwell GEMM on tcgen05 (``kernels/tcgen05.cu``): compile, run, verify, SASS.

``C = A · B`` with A (M×K) and B (K×N) fp16 or bf16, C (M×N) fp32, the accumulator in Tensor Memory
(TMEM). One CTA (``cta_group=1``, an M=128 MMA) or a CTA pair (``cta_group=2``, a cluster of two
CTAs, an M=256 MMA issued by the even CTA). TMA loads a ring of ``stages`` shared-memory stages
(full / empty mbarriers); one thread issues ``tcgen05.mma.kind::f16`` with shared-memory
descriptors and an instruction descriptor; ``tcgen05.commit`` releases each stage and finally
hands the accumulator to four epilogue warps, which read it with ``tcgen05.ld`` and store fp32 C.
The kernel's comments give the ordering rule (PTX ISA section) behind every fence and barrier.

The verbs, as in every kernel family of the course:

* :func:`compile_gemm` — NVRTC → sm_100a cubin; works on any machine, with or without a GPU;
* :func:`run_gemm` — validate, then launch; **refuses** before touching the GPU unless the GPU is
  compute capability 10.0 (an sm_100a cubin runs nowhere else; an H200 is 9.0);
* :func:`verify_gemm` — fresh random inputs, poisoned output, an elementwise bound against float64;
* :func:`sass_summary` — what the GPU would execute: UTCHMMA, UTCBAR, LDTM, UTCATOMSWS, UTMALDG, ...

``SUITES["tcgen05"]`` (``python -m asynctc record tcgen05``, compute capability 10.0 only) checks
every configuration of :data:`SUITE_CONFIGS`, then times them beside cuBLAS in the same run.

Descriptors. The 32-bit instruction descriptor and the 64-bit sm_100 shared-memory descriptor are
encoded here by :func:`_idesc` and :func:`_smem_desc`, small private encoders with their bit
layouts cited; the lead engineer switches them to ``asynctc.models.tcgen05`` (the chapter's model
of both descriptors) when the two branches meet. They travel as kernel parameters, so the cubin and
its SASS do not depend on their values.

PTX ISA references (8.6+, "TensorCore 5th Generation Family Instructions"): "Tensor Memory",
"Matrix Descriptors" (shared memory descriptor), "Instruction descriptor", "tcgen05.alloc",
"tcgen05.mma", "tcgen05.commit", "tcgen05.ld", "tcgen05.wait", "tcgen05.fence", "Memory
Consistency Model for 5th generation of TensorCore operations"; "cp.async.bulk.tensor" (.cta_group).

Where things live (one role per file; every public name is re-exported here, so
``from asynctc import tcgen05 as T; T.compile_gemm`` keeps working):

* ``config.py`` — constants, :class:`Tcgen05Error` / :class:`WrongGPUError`, :class:`GemmConfig`,
  the descriptors it is launched with, :func:`kstep_offsets`, :data:`SUITE_CONFIGS`;
* ``launch.py`` — :func:`compile_gemm`, :data:`SASS_CLASSES`, :func:`sass_summary`, :func:`sass_parts`,
  :func:`require_sm100`, :func:`check_operands`, :func:`launcher`, :func:`run_gemm`;
* ``verify.py`` — :class:`GemmCheck`, :func:`error_bound`, :func:`compare`,
  :func:`random_operands`, :func:`check_shapes`, :func:`verify_gemm`;
* ``suite.py`` — ``SUITES["tcgen05"]``: :func:`measure_tcgen05`, :func:`summarize_tcgen05`;
* ``persistent.py`` — the deep dive's persistent GEMM (``kernels/tcgen05_persistent.cu``): two
  TMEM accumulators, a static or cluster-launch-control scheduler, CTA pairs with A multicast,
  block-scaled ``kind::mxf8f6f4``: :class:`PersistentConfig`, :func:`compile_persistent`,
  :func:`persistent_sass_summary`, :func:`run_persistent` (refuses off compute capability 10.0),
  :data:`PERSISTENT_CONFIGS`;
* ``lesson.py`` — chapter 09 §1's register bill (:func:`.lesson.register_bill`: one accumulator or two
  in Hopper's registers beside TMEM's columns) and §5's SASS and descriptor checks (:func:`.lesson.show_sass`);
* ``figures.py`` — :func:`.figures.accumulator_homes` (the bill beside one SM's TMEM; never measures);
* ``prediction.py`` — a model throughput for a B200 (labelled a prediction), beside the public
  anchors' published numbers;
* ``exercises.py`` — the deep dive's auto-checked exercises (``ch09.acc_*``, ``ch09.clc_*``,
  ``ch09.scale_*``).

Models the deep dive runs: :mod:`asynctc.models.tcgen05_sched` (the three-role protocol with a
double-buffered accumulator through chapter 05's mbarrier machinery, deadlock and race diagnosis;
the CLC scheduler) and :mod:`asynctc.models.block_scale` (the scale factors in TMEM, an emulated
block-scaled tile checked against float64).
"""

from __future__ import annotations

from . import config, exercises, launch, persistent, prediction, suite, verify  # noqa: F401
from .config import (ALIGN_SLACK, ARCH, BK_VALUES, DTYPES, ENTRY, MAX_STAGES, SMEM_LIMIT, SOURCE,
                     STATIC_SMEM, SUITE_CONFIGS, SWIZZLE_BYTES, THREADS, TMEM_COLUMNS, WAIT_TAGS,
                     GemmConfig, Tcgen05Error, WrongGPUError, _fail, _is_int,
                     instruction_descriptor, kstep_offsets, operand_descriptor)
from .launch import (SASS_CLASSES, _decode_error, _np_dtype, check_operands, compile_gemm, launcher,
                     require_sm100, run_gemm, sass_parts, sass_summary)
from .suite import SUITE_SIZES, SUITES, measure_tcgen05, summarize_tcgen05
from .verify import GemmCheck, check_shapes, compare, error_bound, random_operands, verify_gemm
from .persistent import (PERSISTENT_CONFIGS, PERSISTENT_SASS_CLASSES, PersistentConfig,
                         compile_persistent, persistent_sass_summary, run_persistent)
from .prediction import anchors_markdown, prediction_markdown
