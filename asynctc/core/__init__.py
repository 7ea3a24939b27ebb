"""The machinery every chapter uses: :mod:`runtime` (device detection, live/replay, NVRTC → cubin,
launches), :mod:`memory` (device arrays), :mod:`bench` (CUDA-event timing, cuBLAS baseline),
:mod:`checks` (float64 references and comparisons), :mod:`records` (measurements with provenance),
:mod:`sass` (disassembly), :mod:`plots`, :mod:`notebook` (helpers for the notebooks),
:mod:`exercises` (the auto-checker)."""
