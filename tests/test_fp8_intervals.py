"""Chapter 07's promotion-interval test (``asynctc.fp8.promotion_intervals``, ``tools/gpu_ch07.py
--intervals``): its builds, its host code end to end on the CPU (compile, launch, memory and timing
faked, the kernel emulated: test_fp8's fakes), its table and the script's entry. No timing here."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from asynctc import fp8
from asynctc.core import records

from test_fp8 import _fake_gpu
from test_gpu_tools import _lines, _load, clean, gpu  # noqa: F401  (fixtures)


def test_interval_builds_differ_only_in_promote():
    cfgs = {p: fp8.identify._interval_config(p) for p in fp8.INTERVALS}
    assert fp8.INTERVALS == (0, 1, 2, 4) and fp8.INTERVAL_SIZES == (4096, 8192)
    base = cfgs[0]
    assert (base.bm, base.bn, base.consumers, base.stages, base.cluster) == (128, 128, 2, 6, 1)
    for p, c in cfgs.items():
        assert c.promote == p and c.replace(promote=0) == base
        assert c.defines["PROMOTE"] == p
    assert cfgs[1] == fp8.identify._configs()[(2, 1)]        # the promotion-cost test's build
    assert "before any GPU run" in fp8.INTERVAL_PREDICTION


def test_promotion_intervals_on_the_emulator(monkeypatch):
    _fake_gpu(monkeypatch)
    monkeypatch.setattr(fp8.identify, "sass_counts", lambda cfg: {"FADD": 64 if cfg.promote else 0})
    res = fp8.promotion_intervals(np.random.default_rng(4), lambda s: None, sizes=(256,), reps=1)
    assert [(r["size"], r["promote"]) for r in res["rows"]] == [(256, p) for p in (0, 1, 2, 4)]
    assert all(r["check_rows"]["passed"] for r in res["rows"])
    assert set(res["kept"][256]) == {0, 1, 2, 4} and res["kept"][256][0] == 1.0
    back = json.loads(json.dumps({"promotion_intervals": res}))     # as a record holds it
    text = fp8.interval_table(back)
    assert text.splitlines()[0].split() == ["size", "P", "TFLOP/s", "kept", "SASS"]
    assert len(text.splitlines()) == 5 and " 256  4 " in text
    assert fp8.interval_table({}) == "no promotion-interval test in this record"


@pytest.mark.parametrize("argv,want,saved", [
    (["--intervals"], dict(experiment=False, cost=False, intervals=True), False),
    (["--fit", "--intervals", "--record"], dict(intervals=True), True)])
def test_ch07_intervals_entry(argv, want, saved, gpu, monkeypatch, capsys):  # noqa: F811
    out = Path(records.data_dir()).parent / "out"
    seen = []
    monkeypatch.setattr(fp8, "measure_fp8", lambda **kw: seen.append("fp8") or {})
    monkeypatch.setattr(fp8, "measure_fp8_fit",
                        lambda progress=None, **kw: seen.append(kw) or {"promotion_intervals": {}})
    monkeypatch.setattr(fp8, "summarize_fp8_fit", lambda rec: f"SUMMARY {rec.suite}")
    sys.argv = ["gpu_ch07.py", "--out", str(out), *argv]
    assert _load("gpu_ch07").main() == 0
    lines = _lines(capsys.readouterr().out)
    assert seen == [want] and "SUMMARY fp8_fit" in lines and lines[-1] == "[t] done"
    files = sorted(p.name for p in Path(records.data_dir()).rglob("*.json"))
    assert files == (["fp8_fit.json"] if saved else [])


def test_ch07_intervals_alone_refuses_record(gpu):  # noqa: F811
    sys.argv = ["gpu_ch07.py", "--intervals", "--record"]
    with pytest.raises(SystemExit):
        _load("gpu_ch07").main()

