"""Chapter 08: pitfalls and debugging — a zoo of public bug reports about asynchronous Tensor Core
code, each diagnosed by a CPU model and reproduced by a variant of ``kernels/pitfalls.cu`` that
ends with a decoded error instead of a hang.

Modules: :mod:`.zoo` (the reports and classes, the hangs/wrong/slow decision table),
:mod:`.ordering` (proxy, bulk-group, wgmma-group, leader and init rules as a checker),
:mod:`.variants` (compile, launch and decode the kernel variants), :mod:`.latent` (BUG 5, 6, 8 —
latent in the ring — under stress, many runs, and their verdict words), :mod:`.diagnosis` (the
one-screen diagnosis, also ``python -m asynctc diagnose``), :mod:`.suite` (the "pitfalls" record),
:mod:`.figures`, :mod:`.exercises`.
"""

from .diagnosis import Diagnosis, diagnose, layout_mismatch, model_diagnosis  # noqa: F401
from .ordering import Hazard, check  # noqa: F401
from .variants import BUGS, Outcome, compile_variant, run_variant  # noqa: F401
from .zoo import CLASSES, BY_KEY, DECISION_TABLE, decision_markdown, reports, table_markdown  # noqa: F401
from .suite import SUITES  # noqa: F401,E402
from . import exercises  # noqa: F401,E402  (registers the ch08.* exercises)
