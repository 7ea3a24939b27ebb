"""Chapter 08's latent variants (BUG 5, 6, 8) under stress (asynctc.pitfalls.latent): the stress
kernels compile to sm_90a with their SASS showing / lacking the instruction each bug drops, the
host's elementwise check names stale and early elements, the verdict words never claim a symptom no
run showed, and ``tools/gpu_ch08.py --latent-only`` merges its outcome into the pitfalls record
(dry run with stand-in runs). GPU tests (marker gpu) launch the stress kernels."""
import json
import shutil
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

from asynctc.core import records
from asynctc.pitfalls import latent as L
from asynctc.pitfalls import suite, variants as V

ROOT = Path(__file__).resolve().parent.parent


def _sass(ck, op):
    return V.sass_count(ck, op)


@pytest.mark.parametrize("rows", [64, 256])
def test_store_stress_sass_lacks_exactly_what_each_bug_drops(rows):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok6, bad6 = L.compile_store_stress(6, True, rows), L.compile_store_stress(6, False, rows)
        ok8, bad8 = L.compile_store_stress(8, True, rows), L.compile_store_stress(8, False, rows)
    # fence.proxy.async.shared::cta is FENCE.VIEW.ASYNC.S (with a MEMBAR.ALL.CTA) in SASS
    # (two: every writer's, and the issuing thread's after its own last chunk)
    assert _sass(ok6, "FENCE.VIEW.ASYNC.S") == 2 and _sass(bad6, "FENCE.VIEW.ASYNC.S") == 0
    assert _sass(ok6, "MEMBAR") == 2 and _sass(bad6, "MEMBAR") == 0
    # cp.async.bulk.wait_group.read 0 is one DEPBAR.LE (the final wait_group 0 is the other)
    assert _sass(ok8, "DEPBAR") == 2 and _sass(bad8, "DEPBAR") == 1
    assert _sass(bad8, "FENCE.VIEW.ASYNC.S") == 2 and _sass(bad6, "DEPBAR") == 2
    for ck in (ok6, bad6, ok8, bad8):
        assert _sass(ck, "UTMASTG") == 1 and _sass(ck, "BAR.SYNC") == 2
    assert ok6.defines == ok8.defines                      # "fixed" is one build for both bugs


def test_init_race_sass_shows_the_barrier_only_in_the_correct_build():
    cks = {i: L.compile_init_race(i) for i in L.INIT_MODES}
    # fence.mbarrier_init.release.cluster leaves no SASS instruction of its own (no cluster
    # launch): the correct ordering shows as the one BAR.SYNC the broken ones lack
    assert _sass(cks[0], "BAR.SYNC") == 1
    assert _sass(cks[1], "BAR.SYNC") == 0 and _sass(cks[2], "BAR.SYNC") == 0
    for ck in cks.values():
        assert _sass(ck, "SYNCS.EXCH") == 1 and _sass(ck, "SYNCS.ARRIVE") == 1


def test_bad_arguments_are_refused_naming_the_field():
    with pytest.raises(ValueError, match="bug=5"):
        L.store_defines(5, False, 64)
    with pytest.raises(ValueError, match="rows=12"):
        L.store_defines(6, False, 12)
    with pytest.raises(ValueError, match="rows=512"):
        L.store_defines(6, False, 512)
    with pytest.raises(TypeError, match="rows"):
        L.store_defines(6, False, 64.0)
    with pytest.raises(ValueError, match="init=3"):
        L.compile_init_race(3)


def _want(ctas=3, iters=4, rows=8, seed=12345):
    return L.pattern(seed, ctas, iters, rows * 32)


def test_pattern_is_fresh_per_cta_and_iteration():
    w = _want()
    assert w.dtype == np.uint32 and w.shape == (3, 4, 256)
    assert len(np.unique(w)) > 0.99 * w.size and not (w == 0).any()
    assert (w[:, 1:] != w[:, :-1]).all() and (w[1:] != w[:-1]).all()


def test_check_store_names_previous_next_and_poison_elements():
    want = _want()
    assert L.check_store(want.copy(), want)["wrong"] == 0
    assert L.store_words(L.check_store(want.copy(), want)) == "ok"
    got = want.copy()
    got[1, 2, 40] = want[1, 1, 40]          # the store read the buffer before the writes: previous
    got[2, 0, 7] = want[2, 1, 7]            # ... after the next iteration overwrote it: next
    got[0, 3, 255] = 0xFFFFFFFF             # never written
    got[0, 0, 3] = 5                        # anything else
    c = L.check_store(got, want)
    assert (c["wrong"], c["previous"], c["next"], c["poison"], c["other"]) == (4, 1, 1, 1, 1)
    assert c["first"] == {"cta": 0, "iteration": 0, "row": 0, "col": 6, "got": 5,
                          "want": int(want[0, 0, 3]), "holds": "neither neighbour's"}
    words = L.store_words(c)
    assert words.startswith("wrong: first wrong element (row 0, col 6) of CTA 0's box 0")
    assert "4 of 3072 words wrong: 1 previous, 1 next, 1 poison, 1 other" in words
    only_next = want.copy()
    only_next[1, 0, 33] = want[1, 1, 33]
    assert L.check_store(only_next, want)["first"] == {
        "cta": 1, "iteration": 0, "row": 1, "col": 2, "got": int(want[1, 1, 33]),
        "want": int(want[1, 0, 33]), "holds": "the next iteration's"}


def _fake_latent(manifest8=True):
    ring = [{"bug": b, "tiles": t, "runs": 3, "outcomes": {"ok": 3}} for b in (5, 6, 8) for t in (8, 255)]
    bad = "wrong: first wrong element (row 0, col 0) of CTA 0's box 0: got 0x1, want 0x2 (the next iteration's value)"
    store = [{"bug": b, "fixed": f, "rows": 64, "iters": 64,
              "runs": [{"words": bad if (b == 8 and not f and manifest8) else "ok"}] * 2}
             for b in (6, 8) for f in (True, False)]
    init = [{"init": i, "step_cycles": 0, "runs": [{"words": "ok"}] * 4} for i in (0, 1, 2)]
    out = {"ring": ring, "store": store, "init": init, "sanitizer": []}
    out["verdicts"] = L.verdicts(out)
    return out


def test_verdicts_never_claim_a_symptom_no_run_showed():
    v = _fake_latent()["verdicts"]
    assert v["8"].startswith("manifest in 2 of 8 runs: wrong: first wrong element")
    assert v["6"] == "latent on this GPU in 8 runs (every one ended ok)"
    # BUG 5 counts the ring runs and the init race's broken orderings (1 and 2), not the correct 0
    assert v["5"] == "latent on this GPU in 14 runs (every one ended ok)"
    assert v["5_fence_only"] == v["5_no_order"] == "latent on this GPU in 4 runs (every one ended ok)"
    lat = _fake_latent()
    lat["init"][2]["runs"][1] = {"words": "lost: 3 of 2112 CTAs timed out on phase 0"}
    v2 = L.verdicts(lat)
    assert v2["5_no_order"] == "manifest in 1 of 4 runs: lost: 3 of 2112 CTAs timed out on phase 0"
    assert v2["5"].startswith("manifest in 1 of 14 runs: lost: 3")
    assert v2["5_fence_only"].startswith("latent")
    assert all(w.startswith("latent") for w in _fake_latent(False)["verdicts"].values())
    text = L.summarize_latent(_fake_latent())
    assert "BUG= 8 store_buffer_reuse" in text and "BUG= 6 proxy_fence" in text
    assert "BUG= 5 init race fence_only" in text


def test_merge_keeps_the_rest_of_the_record():
    rec = records.load("pitfalls", "h200")
    lat = _fake_latent()
    m = L.merge(rec.results, lat, {"date": "x"})
    assert m["variants"] == rec.results["variants"] and m["sanitizer"] == rec.results["sanitizer"]
    assert m["latent"]["verdicts"] == lat["verdicts"] and m["latent"]["provenance"] == {"date": "x"}
    summary = suite.summarize(records.Record("pitfalls", rec.provenance, m))
    assert "latent variants under stress:" in summary and "manifest in 2 of 8" in summary


def _load_tool():
    path = ROOT / "tools" / "gpu_ch08.py"
    mod = types.ModuleType("_tool_gpu_ch08_latent")
    mod.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), mod.__dict__)
    return mod


def test_gpu_ch08_latent_only_dry_run_merges_into_the_record(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(sys, "path", list(sys.path))
    data = tmp_path / "data"
    (data / "h200").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "h200" / "pitfalls.json", data / "h200" / "pitfalls.json")
    before = json.loads((data / "h200" / "pitfalls.json").read_text())
    monkeypatch.setenv("ASYNCTC_DATA", str(data))
    mod = _load_tool()
    monkeypatch.setattr(records, "provenance_start", lambda: dict(before["provenance"]))
    monkeypatch.setattr(records, "nvidia_smi_clocks", lambda: {})
    calls = []

    def child(expr, timeout_s=0):             # the children, in-process, with stand-in runs
        calls.append(expr)
        if "ring_repeats" in expr:
            b, t, n = (int(x) for x in expr.split("(", 1)[1].rstrip(")").split(","))
            return {"bug": b, "tiles": t, "runs": n, "outcomes": {"ok": n}}
        if "run_store_stress" in expr:
            args = expr.split("run_store_stress(", 1)[1].split(")")[0].split(", ")
            bug, fixed = int(args[0]), args[1] == "True"
            w = "ok" if fixed or bug == 6 else "wrong: first wrong element ... (the next iteration's value)"
            return [{"bug": bug, "fixed": fixed, "rows": int(args[2]), "iters": int(args[3]),
                     "words": w, "check": None}] * L.STORE_REPS
        return [{"init": 0, "words": "ok", "lost": 0}] * 4
    monkeypatch.setattr(L, "_child", child)
    from asynctc.core import runtime
    pre = []
    monkeypatch.setattr(runtime, "precompile", lambda jobs: pre.append(jobs))
    sanitized = []
    monkeypatch.setattr(suite, "sanitize", lambda bug, tool, timeout_s=0, code=None: sanitized.append((bug, tool, code is not None)) or {
        "bug": bug, "tool": tool, "summary": "ERROR SUMMARY: 0 errors", "errors": 0, "excerpt": [],
        "outcome": "ok", "rc": 0})
    out = tmp_path / "o"
    monkeypatch.setattr(mod, "start", lambda o, long_header=False: (Path(o).mkdir(parents=True, exist_ok=True) or Path(o), print))
    monkeypatch.setattr(sys, "argv", ["gpu_ch08.py", "--latent-only", "--out", str(out), "--record"])
    assert mod.main() == 0
    doc = json.loads((data / "h200" / "pitfalls.json").read_text())
    assert doc["results"]["variants"] == before["results"]["variants"]
    lat = doc["results"]["latent"]
    assert lat["verdicts"]["8"].startswith("manifest in 8 of 48 runs")
    assert lat["verdicts"]["6"] == "latent on this GPU in 48 runs (every one ended ok)"
    assert sanitized == [(b, t, False) for b in L.SANITIZED_LATENT for t in L.LATENT_SANITIZERS] + \
        [(6, "racecheck", True), (8, "racecheck", True)]
    assert (out / "latent.json").is_file() and (out / "pitfalls.json").is_file()
    assert len(pre) == 1 and len(pre[0]) == 3 + 6 + 3          # ring; store: 2 sizes × (fixed, 6, 8); init
    assert sum("ring_repeats" in c for c in calls) == len(L.SANITIZED_LATENT) * len(L.RING_TILES)
    assert "latent variants under stress:" in capsys.readouterr().out


def test_gpu_ch08_latent_only_stops_when_a_fixed_build_is_wrong(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("ASYNCTC_DATA", str(tmp_path / "data"))
    mod = _load_tool()
    prov = json.loads((ROOT / "data" / "h200" / "pitfalls.json").read_text())["provenance"]
    monkeypatch.setattr(records, "provenance_start", lambda: dict(prov))
    monkeypatch.setattr(records, "nvidia_smi_clocks", lambda: {})
    monkeypatch.setattr(L, "_child", lambda expr, timeout_s=0: (
        {"bug": 5, "tiles": 8, "runs": 1, "outcomes": {"ok": 1}} if "ring" in expr
        else [{"words": "wrong: stale", "check": None}]))
    from asynctc.core import runtime
    monkeypatch.setattr(runtime, "precompile", lambda jobs: None)
    monkeypatch.setattr(mod, "start", lambda o, long_header=False: (Path(o).mkdir(parents=True, exist_ok=True) or Path(o), print))
    monkeypatch.setattr(sys, "argv", ["gpu_ch08.py", "--latent-only", "--quick", "--out", str(tmp_path / "o"), "--record"])
    assert mod.main() == 1
    assert "the fixed store stress (BUG 6, rows 64) did not end ok" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()


# ---- on the GPU ---------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("bug", [6, 8])
def test_gpu_store_stress_fixed_is_exact_and_broken_ends_in_words(bug):
    """The fixed build is word-exact (so the host pattern is the kernel's); the broken one ends
    "ok" or names its first wrong element — never a hang."""
    for rows, iters in L.STORE_SIZES:
        r = L.run_store_stress(bug, True, rows, iters)
        assert r["words"] == "ok", r["words"]
        b = L.run_store_stress(bug, False, rows, iters)
        assert b["words"] == "ok" or b["words"].startswith("wrong: first wrong element"), b["words"]


@pytest.mark.gpu
def test_gpu_init_race_correct_never_loses_and_broken_ends():
    assert L.run_init_race(0)["lost"] == 0
    for init, step in ((1, 0), (2, 0), (2, 32)):
        r = L.run_init_race(init, step)
        assert r["words"] == "ok" or r["words"].startswith("lost: "), r["words"]
        assert len(r["lost_by_delay"]) == 64 and sum(r["lost_by_delay"]) == r["lost"]


def test_recorded_verdict_reads_the_record_or_says_it_is_not_run_yet():
    rec = records.load("pitfalls", "h200")
    if "latent" not in rec.results:
        assert L.recorded_verdict(6, rec).startswith("not run under stress yet")
    m = records.Record("pitfalls", rec.provenance,
                       L.merge(rec.results, _fake_latent(), {"date": "2026-12-02T01:45:00"}))
    assert L.recorded_verdict(8, m) == (f"{_fake_latent()['verdicts']['8']}  "
                                        f"[{rec.provenance['gpu']}, 2026-12-02]")
    assert L.recorded_verdict(6, m).startswith("latent on this GPU in 8 runs")
    assert L.recorded_verdict("5_no_order", m).startswith("latent on this GPU in 4 runs")
    with pytest.raises(ValueError, match="bug=9"):
        L.recorded_verdict(9, m)


def test_the_sanitizer_runs_the_stress_kernel_small():
    code = L.stress_sanitizer_code(8)
    assert "run_store_stress(8, False, 64, 4, ctas=2)" in code and "outcome:" in code
    cmd = suite.sanitizer_command(8, "racecheck", "/x/compute-sanitizer", code)
    assert cmd[:3] == ["/x/compute-sanitizer", "--tool", "racecheck"] and cmd[-1] == code
    assert "run_variant(8" in suite.sanitizer_command(8, "racecheck", "x")[-1]
    with pytest.raises(ValueError, match="bug=5"):
        L.stress_sanitizer_code(5)


def test_run_functions_drive_an_emulated_launch(monkeypatch):
    """The host side of run_store_stress / run_init_race against an emulator of their kernels
    (tests/fakes.py's FakeArray, no GPU): arguments, the output's layout (box = cta × iters + it,
    word = row × 32 + col / 2) and the words."""
    from asynctc import tma
    from asynctc.core import memory, runtime
    from fakes import FakeArray
    monkeypatch.setattr(memory, "DeviceArray", FakeArray)
    monkeypatch.setattr(tma, "make_tensor_map", lambda arr, box, swizzle=0: ((arr, tuple(box), swizzle), None))
    monkeypatch.setattr(runtime, "device_info", lambda: None)
    seen = {}

    def launch(ck, grid, block, *args, shmem_bytes=0, **kw):
        seen.update(name=ck.name, grid=grid, block=block, smem=shmem_bytes, defines=dict(ck.defines))
        if ck.name == L.STORE_ENTRY:
            (arr, box, swz), iters, seed = args
            rows = box[0]
            assert box == (rows, 64) and swz == 0 and arr.dtype == np.float16
            w = L.pattern(int(seed), grid, int(iters), rows * 32)
            if ck.defines["WAIT_READ"] == 0:             # emulate the overwrite: box 1 word 5
                w[0, 1, 5] = w[0, 2, 5]
            arr.h.view(np.uint32)[...] = w.reshape(grid * int(iters) * rows, 32)
        else:
            res, step, wait_ns, nonce = args
            assert res.dtype == np.uint32 and int(nonce) >= 1 and int(wait_ns) == 200_000
            res.h[...] = 2
            if ck.defines["INIT"] == 2:
                res.h[::64] = 1                           # the CTAs with delay 0 lost theirs
    monkeypatch.setattr(runtime, "launch", launch)
    r = L.run_store_stress(8, True, 64, 4, ctas=3, seed=1)
    assert r["words"] == "ok" and seen["grid"] == 3 and seen["block"] == 128 and seen["smem"] == 64 * 128 + 128
    assert L.run_store_stress(8, True, 64, 4, seed=1)["ctas"] == 264      # two per SM, 132 SMs
    b = L.run_store_stress(8, False, 64, 4, ctas=3, seed=1)
    assert b["words"].startswith("wrong: first wrong element (row 0, col 10) of CTA 0's box 1")
    assert "the next iteration's value" in b["words"] and b["check"]["next"] == 1
    ok = L.run_init_race(0)
    assert ok["words"] == "ok" and ok["lost"] == 0 and seen["block"] == 64
    lost = L.run_init_race(2, 4, ctas=640)
    assert lost["lost"] == 10 and lost["lost_by_delay"][0] == 10 and sum(lost["lost_by_delay"]) == 10
    assert lost["words"].startswith("lost: 10 of 640 CTAs timed out on phase 0")
