"""Chapter 03 — the mbarrier life cycle recorded by the ``mbarrier_lifecycle`` kernel: the expected
steps (:data:`LIFECYCLE`, from the PTX ISA), one run decoded (:func:`mbarrier_lifecycle`) and its
table (:func:`lifecycle_table`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..core import runtime
from ..core.memory import DeviceArray
from ..models.layout import SmemTile
from .launch import ERR_MBARRIER_TIMEOUT, _random_tensor, compile_tma
from .maps import tensor_map_for_tile


# --------------------------------------------------------------------------------------------------
# The mbarrier life cycle
# --------------------------------------------------------------------------------------------------

#: What each recorded step of ``mbarrier_lifecycle`` is, and the parities it must show:
#: (description, barrier, test_wait.parity(0), test_wait.parity(1), wait result or None).
LIFECYCLE = (
    ("init(full, count=1)", "full", 0, 1, None),
    ("arrive.expect_tx(full, box bytes): arrived, bytes pending", "full", 0, 1, None),
    ("TMA complete_tx brought the bytes: phase 0 complete", "full", 1, 0, 1),
    ("stage reused: expect_tx + second box: phase 1 complete", "full", 0, 1, 1),
    ("counter barrier (count 64) after 63 arrivals", "counter", 0, 1, None),
    ("64th arrival: phase 0 complete", "counter", 1, 0, 1),
    ("a wait on the open phase, which nobody completes: gave up, no hang", "counter", 1, 0, 0),
)

#: The phase open (in progress) on the step's barrier after each step of :data:`LIFECYCLE`. The
#: kernel does not record it; it follows from the steps (chapter 05's ring model replays them,
#: tests/test_pipeline_model.py). With it the parity columns read by the PTX ISA's rule
#: (*mbarrier.test_wait/try_wait*: the parity names the open phase or the one just before it):
#: ``test_wait.parity(P)`` is 1 exactly when P is not the open phase's parity.
LIFECYCLE_OPEN = (0, 0, 1, 2, 0, 1, 1)


@dataclasses.dataclass
class LifecycleRun:
    """The recorded steps (list of dicts), the data checks and the error words of one run."""

    steps: list[dict]
    boxes_ok: bool
    err: tuple[int, int]
    tx_bytes: int

    @property
    def passed(self) -> bool:
        return (self.boxes_ok and self.err[0] == 0
                and self.err[1] == (ERR_MBARRIER_TIMEOUT | 6 << 8)
                and all(s["as_expected"] for s in self.steps))


def mbarrier_lifecycle(box_rows: int = 16, cols: int = 64, timeout_tries: int = 64,
                       rng=None) -> LifecycleRun:
    """Run the ``mbarrier_lifecycle`` kernel on a fresh random fp16 tensor of 2·box_rows × cols
    and decode its log (see :data:`LIFECYCLE`). ``box_rows`` × ``cols`` × 2 bytes is the
    expect_tx count; the two boxes read back must equal the tensor's halves."""
    tile = SmemTile(box_rows, cols, "float16", 0)
    if tile.box_bytes > 8192:
        raise ValueError(f"box_rows×cols×2 = {tile.box_bytes} B: keep the box ≤ 8192 bytes")
    if tile.box_bytes < 256:
        raise ValueError(f"box_rows×cols×2 = {tile.box_bytes} B: the kernel checksums the first "
                         "256 bytes of the stage; use a box of at least 256 bytes")
    if not 1 <= timeout_tries <= 10000:
        raise ValueError(f"timeout_tries={timeout_tries}: must be 1..10000")
    rng = rng if rng is not None else np.random.default_rng()
    host = _random_tensor((2 * box_rows, cols), np.dtype(np.float16), rng)
    src = DeviceArray.from_host(host)
    desc, spec = tensor_map_for_tile(src, tile)
    ck = compile_tma("mbarrier_lifecycle")
    log = DeviceArray.poisoned((len(LIFECYCLE), 8), np.uint32)
    boxes = DeviceArray.poisoned(2 * tile.box_bytes, np.uint8)
    err = DeviceArray.from_host(np.zeros(2, np.uint32))
    u32 = np.uint32
    runtime.launch(ck, 1, 64, desc, np.int32(box_rows), u32(tile.box_bytes), log, boxes,
                   u32(timeout_tries), err, shmem_bytes=tile.size_bytes + 1024)
    e = tuple(int(x) for x in err.to_host())
    raw = log.to_host()
    got_boxes = boxes.to_host()
    want_boxes = host.view(np.uint8).ravel()
    halves = [want_boxes[: tile.box_bytes], want_boxes[tile.box_bytes:]]
    xor = [int(np.bitwise_xor.reduce(h[:256].view(np.uint32))) for h in halves]
    steps = []
    for i, (desc_txt, bar, p0, p1, res) in enumerate(LIFECYCLE):
        r = raw[i]
        waited = None if r[3] == 0xFFFFFFFF else int(r[3])
        result = None if r[4] == 0xFFFFFFFF else int(r[4])
        ok = int(r[0]) == i and int(r[1]) == p0 and int(r[2]) == p1 and result == res
        if i == 2:
            ok = ok and int(r[5]) == xor[0]
        if i == 3:
            ok = ok and int(r[5]) == xor[1]
        steps.append({"step": i, "what": desc_txt, "barrier": bar, "parity0_done": int(r[1]),
                      "parity1_done": int(r[2]), "waited_parity": waited, "wait_result": result,
                      "stage_xor": int(r[5]), "timer_ns_low32": int(r[6]), "as_expected": bool(ok)})
    return LifecycleRun(steps, bool(np.array_equal(got_boxes, want_boxes)), e, tile.box_bytes)


def lifecycle_table(run_or_steps) -> str:
    """A fixed-width table of the recorded steps: ``open`` is the phase in progress after the
    step (:data:`LIFECYCLE_OPEN`); ``wait(0) passes`` / ``wait(1) passes`` are
    ``test_wait.parity(0)`` / ``(1)`` after the step, as yes / no (yes: a wait on that parity would
    pass, since the phase of that parity just before the open one has completed; a wait on the open
    phase's own parity would not); ``waited on`` is the parity the step's wait was on and what the
    wait returned; ``step`` is what the step does (:data:`LIFECYCLE`, the expectation the ✓
    compares with)."""
    steps = run_or_steps.steps if isinstance(run_or_steps, LifecycleRun) else run_or_steps
    result = {1: "passed", 0: "timed out"}
    yes = {1: "yes", 0: "no"}
    lines = [f"{'#':>2} {'bar':8s} {'open':>4} {'wait(0) passes':>14} {'wait(1) passes':>14}  "
             f"{'waited on':19s} ok  step"]
    for s in steps:
        w = ("-" if s["waited_parity"] is None else
             f"parity {s['waited_parity']}: {result.get(s['wait_result'], s['wait_result'])}")
        lines.append(f"{s['step']:>2} {s['barrier']:8s} {LIFECYCLE_OPEN[s['step']]:>4} "
                     f"{yes.get(s['parity0_done'], s['parity0_done']):>14} "
                     f"{yes.get(s['parity1_done'], s['parity1_done']):>14}  "
                     f"{w:19s} {'✓' if s['as_expected'] else '✗'}   {LIFECYCLE[s['step']][0]}")
    return "\n".join(lines)
