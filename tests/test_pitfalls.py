"""Chapter 08: the zoo's citations and classes, each class's CPU-model diagnosis (broken protocol
diagnosed, repaired protocol clean), each kernel variant compiled to sm_90a cubin with its SASS
checked, the decoders, the exercises, the diagnose entry point and command, the suite and
tools/gpu_ch08.py (dry run with a stand-in GPU). GPU tests (marker gpu) launch every variant."""
import json
import re
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

from asynctc import pitfalls as F
from asynctc.core import exercises, records
from asynctc.models import pipeline as M
from asynctc.pitfalls import diagnosis as D
from asynctc.pitfalls import ordering as O
from asynctc.pitfalls import suite, variants as V, zoo

ROOT = Path(__file__).resolve().parent.parent


def _ops(bug):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return V.compile_variant(bug)


def _count(bug, opcode):
    return V.sass_count(_ops(bug), opcode)


# ---- the zoo ------------------------------------------------------------------------------------

def test_zoo_has_twelve_cited_reports_covering_every_class():
    reps = zoo.reports()
    assert len(reps) >= 12
    cites = [r.cite for _, r in reps]
    assert len(cites) == len(set(cites)), "a report is cited twice"
    for _, r in reps:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", r.repo) and r.number > 0
        assert r.kind in ("issue", "PR") and r.symptom in zoo.SYMPTOMS
        assert r.seen and r.fixed
    keys = {c.key for c in zoo.CLASSES}
    assert keys == {"phase_parity", "arrive_count", "init_fence", "proxy_fence", "expect_tx",
                    "misaligned_tile", "missing_wgmma_wait", "store_buffer_reuse",
                    "setmaxnreg_dropped", "swizzle_mismatch", "leader_early"}
    assert sum(1 for c in zoo.CLASSES if c.reports) >= 10


def test_every_class_names_a_test_here_and_a_model():
    here = globals()
    for c in zoo.CLASSES:
        assert c.test in here and callable(here[c.test]), c.test
        family = c.model.split(":")[0]
        assert family in ("pipeline", "ordering", "layout", "ptxas"), c.model
        if family == "pipeline":
            assert c.model.split(":")[1] in M.VARIANTS
        if family == "ordering":
            assert c.model.split(":")[1] in O.PROGRAMS
        if c.bug is not None:
            assert V.BUGS[c.bug][0] == c.key


def test_every_variant_belongs_to_a_class():
    assert V.BUGS[0][0] == "correct"
    for bug, (key, what) in V.BUGS.items():
        assert key == "correct" or key in zoo.BY_KEY, bug
        assert what


def test_tables_render():
    t = zoo.table_markdown()
    assert t.count("\n") >= 2 + len(zoo.reports())
    for _, r in zoo.reports():
        assert r.cite in t
    d = zoo.decision_markdown()
    for symptom, _look, keys in zoo.DECISION_TABLE:
        assert symptom in d
        assert all(k in zoo.BY_KEY for k in keys)
    assert {"hang", "wrong", "slow"} <= {w for s, _l, _k in zoo.DECISION_TABLE for w in ("hang", "wrong", "slow") if w in s}
    # the core lesson's compact form: one row per class, its key and short name, its symptoms,
    # its kernel variant, where the course shows it, every report as a short link to its URL
    c = zoo.table_markdown(compact=True).splitlines()
    assert len(c) == 2 + len(zoo.CLASSES) and len(c) < t.count("\n") + 1
    assert set(zoo.SHORT_TITLES) == set(zoo.SHOWN_IN) == set(zoo.BY_KEY)
    for cls, row in zip(zoo.CLASSES, c[2:]):
        cells = [x.strip() for x in row.strip("|").split("|")]
        assert cells[0] == f"`{cls.key}`: {zoo.SHORT_TITLES[cls.key]}" and len(cells[0]) < 70
        assert cells[1] and set(cells[1].split(", ")) <= set(zoo.SYMPTOM_WORDS)
        assert cells[2] == (f"BUG={cls.bug}" if cls.bug is not None else "SASS only")
        assert all(f"]({r.url})" in cells[4] and f" #{r.number}]" in cells[4] for r in cls.reports)
        assert all(r.seen not in row and r.repo not in cells[4].split("](")[0] for r in cls.reports)
    assert zoo.symptoms("setmaxnreg_dropped") == ["slow"]
    assert zoo.symptoms("misaligned_tile") == ["wrong always", "crash"]
    # every ptxas code the decision table names is said in words where it is named
    for code in re.findall(r"C75\d\d", d):
        assert re.search(code + r": \w", d), code


def test_shown_in_names_sections_that_exist():
    """Each place of zoo.SHOWN_IN ("§4a" in chapter 08, "08b §3" elsewhere) is a section heading
    of that notebook's source."""
    src = Path(__file__).resolve().parent.parent / "notebooks" / "src"
    for key, places in zoo.SHOWN_IN.items():
        for place in places.split("; "):
            nb, _, sec = place.rpartition(" ")
            files = list(src.glob(f"{nb or '08'}_*.py"))
            assert len(files) == 1 and re.fullmatch(r"§\d+[a-z]?", sec), (key, place)
            num, sub = re.fullmatch(r"§(\d+)([a-z]?)", sec).groups()
            head = rf"^# ###? {num}{sub}\. " if sub else rf"^# ## {num}\. "
            assert re.search(head, files[0].read_text(), re.M), (key, place, files[0].name)


# ---- one test per class: model diagnosis + kernel variant ------------------------------------------

def test_phase_parity():
    d = D.pipeline_diagnosis("wrong_empty_parity")
    assert d.kind == "Deadlock" and d.detail.barrier == "empty" and d.detail.iteration == 0
    assert d.detail.who_waits == ("producer",) and "fresh barrier" in d.detail.why
    r = D.pipeline_diagnosis("full_parity_flipped")
    assert r.kind == "Race" and r.detail.iteration == 0
    assert D.pipeline_diagnosis("correct").kind == "None"
    assert D.model_diagnosis("phase_parity").kind == "Deadlock"
    # the variants differ from the correct kernel only in the parity they compute
    assert _count(1, "SYNCS.PHASECHK") == _count(0, "SYNCS.PHASECHK") > 0


def test_arrive_count():
    d = D.model_diagnosis("arrive_count")
    assert d.kind == "Deadlock" and d.detail.barrier == "empty"
    assert "127 of its 128 arrivals never come" in d.detail.why
    # too few expected arrivals: a count of 1 completes on the first lane's arrive
    bar = M.Mbarrier(1, "w_loaded")
    assert bar.arrive() is True or bar.test_wait(0)
    assert _count(3, "SYNCS.ARRIVE") == _count(0, "SYNCS.ARRIVE")


def test_init_fence():
    d = D.model_diagnosis("init_fence")
    assert d.kind == "Hazard" and d.detail[0].rule == "init"
    assert O.check(O.PROGRAMS["init"]["correct"]) == []
    assert O.check([("init", "b"), ("fence_init", None), ("use", "b")])[0].why.endswith("uninitialised")
    # measured: fence.mbarrier_init leaves no SASS of its own here; the variant loses its barrier
    assert _count(5, "BAR.SYNC") == _count(0, "BAR.SYNC") - 1


def test_proxy_fence():
    d = D.model_diagnosis("proxy_fence")
    assert d.kind == "Hazard" and d.detail[0].rule == "proxy"
    assert O.check(O.PROGRAMS["proxy"]["correct"]) == []
    fenced_no_sync = [("st", "out"), ("fence_proxy", None), ("tma_store", "out")]
    assert "barrier" in O.check(fenced_no_sync)[0].why
    assert _count(6, "FENCE.VIEW.ASYNC.S") == _count(0, "FENCE.VIEW.ASYNC.S") - 1


def test_expect_tx():
    d = D.model_diagnosis("expect_tx")
    assert d.kind == "Deadlock" and d.detail.barrier == "full" and d.detail.who_waits == ("wg0",)
    assert "tx-count 1024 bytes" in d.detail.why
    small = D.pipeline_diagnosis("expect_tx_too_small")
    assert small.kind in ("Race", "Deadlock")
    assert _count(4, "UTMALDG") == _count(0, "UTMALDG") == 1


def test_misaligned_tile():
    assert D.layout_mismatch(128, 128, 0) is None
    m = D.layout_mismatch(128, 128, 128)
    assert (m["row"], m["col"], m["found_row"], m["found_col"]) == (0, 0, 0, 8)
    assert m["wrong"] == m["total"] == 4096
    assert D.layout_mismatch(128, 128, 1024) is None          # a whole repeat later: fine again
    with pytest.raises(ValueError, match="128-byte aligned"):
        D.layout_mismatch(128, 128, 16)
    assert D.model_diagnosis("misaligned_tile").kind == "Layout"
    assert _count(7, "UTMALDG") == 1


def test_missing_wgmma_wait():
    d = D.model_diagnosis("missing_wgmma_wait")
    assert d.kind == "Hazard" and d.detail[0].rule == "wgmma"
    assert O.check(O.PROGRAMS["wgmma"]["correct"]) == []
    # wait_group 1 leaves the group of stage 1 pending: releasing stage 1 is still a hazard
    prog = O.PROGRAMS["wgmma"]["correct"][:-1] + [("arrive", 1)]
    assert O.check(prog)[0].rule == "wgmma"
    # the compiled release: without the wait, SYNCS.ARRIVE comes before WARPGROUP.DEPBAR
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert V.release_order(V.compile_wgmma_release(True)) == ["HGMMA", "WARPGROUP.DEPBAR", "SYNCS.ARRIVE"]
        assert V.release_order(V.compile_wgmma_release(False)) == ["HGMMA", "SYNCS.ARRIVE", "WARPGROUP.DEPBAR"]
    assert zoo.BY_KEY["missing_wgmma_wait"].compiled.startswith(V.WGMMA_ENTRY)


def test_store_buffer_reuse():
    d = D.model_diagnosis("store_buffer_reuse")
    assert d.kind == "Hazard" and d.detail[0].rule == "store"
    assert O.check(O.PROGRAMS["store"]["correct"]) == []
    # waiting with 1 group allowed in flight does not cover the only group (DeepEP#657's case)
    prog = [("st", "out"), ("fence_proxy", None), ("sync", None), ("tma_store", "out"),
            ("bulk_commit", None), ("bulk_wait_read", 1), ("sync", None), ("st", "out")]
    assert O.check(prog)[0].rule == "store"
    assert _count(8, "DEPBAR") == _count(0, "DEPBAR") - 1


def test_setmaxnreg_dropped():
    d = D.model_diagnosis("setmaxnreg_dropped")
    assert d.kind == "Ptxas" and d.detail["without"] == 0 and d.detail["with"] == 2
    assert "C7508" in d.detail["line"]
    _ck, diags = V.compile_setmaxnreg(True)
    assert not [x for x in diags if "setmaxnreg" in x]


def test_swizzle_mismatch():
    m = D.layout_mismatch(128, 0, 0)
    assert (m["row"], m["col"]) == (1, 0) and m["wrong"] == 4096 - 512   # row r % 8 == 0 agrees
    assert D.layout_mismatch(64, 64, 0) is None
    assert D.model_diagnosis("swizzle_mismatch").kind == "Layout"
    assert _count(10, "LDS") == _count(0, "LDS")


def test_leader_early():
    d = D.model_diagnosis("leader_early")
    assert d.kind == "Hazard" and d.detail[0].rule == "leader"
    assert O.check([("ld", 0), ("arrive", 0)])[0].rule == "leader"           # no __syncwarp
    assert O.check(O.PROGRAMS["leader"]["correct"]) == []
    assert _count(9, "SYNCS.ARRIVE") == _count(0, "SYNCS.ARRIVE")


def test_every_variant_compiles_to_sm90a_cubin_without_spills():
    for bug in V.BUGS:
        ck = _ops(bug)
        assert ck.arch == "sm_90a" and ck.cubin[:4] == b"\x7fELF"
        assert ck.resources.spill_stores == 0 and ck.resources.spill_loads == 0
        assert V.sass_count(ck, "UTMASTG") == 1 and V.sass_count(ck, "UTMALDG") == 1


def test_ordering_rejects_malformed_steps():
    with pytest.raises(ValueError, match=r"program\[1\]"):
        O.check([("init", "b"), ("jump", None)])


# ---- decoders -----------------------------------------------------------------------------------

def test_decode_words_and_outcome():
    w = 1 | ((0 << 4 | 2) << 8) | (2 << 16)
    assert V.decode_word(0) == "ok"
    assert V.decode_word(w).startswith("timed out on empty[0] at k-tile 2")
    e = V.decode_errors([w, w, 0])
    assert V.outcome_words(e, None).startswith("bounded wait: producer timed out on empty[0]")
    assert V.outcome_words(V.decode_errors([0, 0, 0]), None) == "ok"


def test_an_error_word_is_taken_apart_field_by_field():
    """Chapter 08 §4a prints each recorded error word with its fields (a fresh reader found
    `word 0x201` undecoded); the fields are chapter 05's decoder's, with this kernel's layout."""
    w = 1 | ((1 << 4 | 2) << 8) | (3 << 16)               # wait_or_record: code | tag << 8 | tile << 16
    assert V.word_fields(w) == {"code": 1, "barrier": 2, "stage": 1, "tile": 3}
    assert V.explain_word(w) == "0x31201 = k-tile 3 << 16 | stage 1 << 12 | barrier 2 (empty) << 8 | code 1 (timeout)"
    text = V.outcome_words(V.decode_errors([w, w, 0x101]), None)
    assert V.words_in(text) == [w, 0x101] and V.words_in("ok") == []


def test_misplaced_offsets_are_whole_chunks_inside_rows():
    """What chapter 08 §4b's guide to its figure says: rows stay, offsets are whole 16-byte chunks
    (8 fp16 elements), the pattern repeats every 8 rows; none where the layouts agree."""
    off = D.misplaced_offsets(128, 128, 128)
    assert not off["rows"].any() and not (off["cols"] % 8).any() and off["cols"].all()
    assert (off["cols"][8:] == off["cols"][:-8]).all()
    agree = D.misplaced_offsets(128, 128, 1024)
    assert not agree["rows"].any() and not agree["cols"].any()


def test_the_op_list_names_instructions_only():
    """describe_ops lists every op by its instruction, none with the rule it satisfies (a fresh
    reader found exercise 2's answer in its description)."""
    ops = O.describe_ops()
    assert all(op in ops for op in O.OPS)
    line = next(x for x in ops.splitlines() if x.startswith('("bulk_wait_read"'))
    assert line.split(")", 1)[1].strip() == "cp.async.bulk.wait_group.read N"


def test_first_wrong_names_the_element(rng):
    x = V.random_input(2, rng)
    assert x.dtype == np.float16 and np.all(np.abs(x) >= np.float16(1e-2)) and not np.any(np.abs(x) == 1)
    assert V.first_wrong(x.copy(), x) is None
    y = x.copy()
    y[70, 3] = np.float16(np.nan)
    y[90, 0] = -y[90, 0]
    f = V.first_wrong(y, x)
    assert (f["row"], f["col"], f["tile"], f["wrong"]) == (70, 3, 1, 2)
    assert "first wrong element (70, 3) of tile 1" in V.outcome_words(V.decode_errors([0, 0, 0]), f)


def test_decode_log():
    log = np.zeros(64, np.uint64)
    log[0] = (1500 << 24) | (1 << 16) | (1 << 8) | 3
    log[32] = (90 << 24) | (5 << 16) | 7
    recs = V.decode_log(log)
    assert recs == [{"role": "producer", "ns": 1500, "event": "empty_wait", "stage": 1, "tile": 3},
                    {"role": "consumers", "ns": 90, "event": "full_pass", "stage": 0, "tile": 7}]


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match="bug="):
        V.compile_variant("1")
    with pytest.raises(ValueError, match="bug=99"):
        V.compile_variant(99)
    with pytest.raises(TypeError):
        D.diagnose(3)
    with pytest.raises(ValueError, match="belongs to"):
        D.diagnose("expect_tx", gpu=False, bug=1, out=lambda s: None)


# ---- exercises ----------------------------------------------------------------------------------

def test_exercise_name_bug():
    mystery = F.exercises.mystery_diagnosis()
    assert exercises.check("ch08.name_bug", "expect_tx", diagnosis=mystery, solution=True)
    assert not exercises.check("ch08.name_bug", "phase_parity", diagnosis=mystery)
    assert not exercises.check("ch08.name_bug", "proxy_fence", diagnosis=mystery)


def test_name_bug_needs_no_name_defined_first(capsys):
    """Newcomer 56: `mystery` lived only in the exercise cell, so an answer checked in a new cell
    raised NameError; without `diagnosis` the check runs 08 §6's hang itself, hints included."""
    assert exercises.check("ch08.name_bug", "expect_tx", solution=True)
    capsys.readouterr()
    assert not exercises.check("ch08.name_bug", "phase_parity")
    assert "parity 0 is what the kernel's formula gives for k-tile 0 on full[0]" in capsys.readouterr().out


def test_name_bug_refusal_lists_the_three_offered_names(capsys):
    """A near-miss ('parity') is refused with the three names 08's prompt offers, not the zoo's 11
    (reader: 8 of them never introduced in the core lesson), and the one it is near."""
    mystery = F.exercises.mystery_diagnosis()
    assert not exercises.check("ch08.name_bug", "parity", diagnosis=mystery)
    out = capsys.readouterr().out
    assert "answer one of 'phase_parity', 'arrive_count', 'expect_tx', spelled as written" in out, out
    assert "did you mean 'phase_parity'?" in out and "proxy_fence" not in out, out
    assert "If so, not quite: parity 0 is what the kernel's formula gives" in out, out   # the hint too (reader 137)
    assert not exercises.check("ch08.name_bug", "expect", diagnosis=mystery)   # near the right one: no hint
    assert "did you mean 'expect_tx'?\n" in capsys.readouterr().out
    src = re.sub(r"\n# ?", " ", (ROOT / "notebooks/src/08_pitfalls.py").read_text())
    assert "`phase_parity`, `arrive_count` or `expect_tx`" in src
    assert set(F.exercises._pipeline_classes()) == {"phase_parity", "arrive_count", "expect_tx"}


def test_name_bug_hints_read_the_symptoms_barrier():
    """Readers 12-13: a wrong class's hint spoke of empty barriers while the symptom is on full. The
    hints now argue from full[0] itself: its parity is the kernel's, its arrivals all came."""
    mystery = F.exercises.mystery_diagnosis()
    for wrong in ("phase_parity", "arrive_count"):
        hint = F.exercises._name_hint(wrong, mystery)
        assert "full[0]" in hint and "empty" not in hint, hint
    assert "parity 0 is what the kernel's formula gives" in F.exercises._name_hint("phase_parity", mystery)


def test_exercise_repair(capsys):
    """A code exercise: the answer is the learner's program, the hint the checker's first hazard."""
    assert exercises.is_code("ch08.repair")
    broken = O.PROGRAMS["store"]["broken"]
    assert not exercises.check("ch08.repair", list(broken), rule="store")
    assert "not answered yet" in capsys.readouterr().out          # the broken program unchanged
    fixed = broken[:5] + [("bulk_wait_read", 0)] + broken[5:]
    assert exercises.check("ch08.repair", fixed, rule="store", solution=True)
    assert capsys.readouterr().out.strip() == f"[ch08.repair] correct — {F.exercises.STORE_NOTE}"
    loose = broken[:5] + [("bulk_wait_read", 1)] + broken[5:]    # the one store may still be reading
    assert not exercises.check("ch08.repair", loose, rule="store")
    assert O.check(loose)[0].why in capsys.readouterr().out
    assert not exercises.check("ch08.repair", [("sync", None)], rule="store")
    assert "keep every step" in capsys.readouterr().out
    assert not exercises.check("ch08.repair", 0, rule="store")    # the old answer, 0 hazards left
    assert "pass your program" in capsys.readouterr().out
    for rule, p in O.PROGRAMS.items():
        if rule != "leader":   # the leader repair reorders the arrive: it is not an insertion
            assert exercises.check("ch08.repair", p["correct"], rule=rule, solution=True)


def test_repair_wording_agrees():
    """08 ex. 2's prompt says one of two tempting places is right in the program; its pass note says
    the kernel has two right places (after the commit, at the next tile's top) and a wrong one
    (after the barrier): the program has exactly one right slot, and the one after the barrier fails
    (reader 116 read "only one is" against "Both are right")."""
    broken = O.PROGRAMS["store"]["broken"]
    right = [i for i in range(len(broken) + 1)
             if not O.check(broken[:i] + [("bulk_wait_read", 0)] + broken[i:])]
    assert right == [broken.index(("bulk_commit", None)) + 1]     # straight after the commit
    assert broken[right[0]] == ("sync", None)                      # ... which is before the barrier
    assert O.check(broken[:right[0] + 1] + [("bulk_wait_read", 0)] + broken[right[0] + 1:])
    note = F.exercises.STORE_NOTE
    for part in ("in this program, only straight after the commit works", "a second right place",
                 "next tile's top",
                 "after that barrier is wrong"):
        assert part in note, part
    assert "Both are right" not in note
    src = re.sub(r"\n# ?", " ", (ROOT / "notebooks/src/08_pitfalls.py").read_text())
    assert "Two places look right; in this program only one is." in src


def test_exercise_first_misplaced():
    assert exercises.check("ch08.first_misplaced", [0, 0], base_offset=128, solution=True)
    assert exercises.check("ch08.first_misplaced", (1, 0), base_offset=0, reader_swizzle=0, solution=True)
    assert not exercises.check("ch08.first_misplaced", [1, 0], base_offset=128)
    # the notebook's form (issue 22: the base-offset answer is printed in section 4b): a 64B reader
    assert exercises.check("ch08.first_misplaced", [4, 0], base_offset=0, reader_swizzle=64, solution=True)
    assert D.layout_mismatch(128, 64, 0)["row"] == 4


def test_exercise_first_misplaced_hint_for_a_64b_reader(capsys):
    assert not exercises.check("ch08.first_misplaced", [1, 0], base_offset=0, reader_swizzle=64)
    assert "rows 0–3 the two agree" in capsys.readouterr().out


# ---- diagnose and the command line ----------------------------------------------------------------

def test_diagnose_replay_fits_one_screen():
    lines = []
    for c in zoo.CLASSES:
        lines.clear()
        r = D.diagnose(c.key, gpu=False, out=lines.append)
        assert 6 <= len(lines) <= 24 and all(len(x) < 400 for x in lines)
        assert lines[0].startswith(f"== {c.title}")
        assert r["model"] in ("Deadlock", "Race", "Hazard", "Layout", "Ptxas")


def test_diagnose_shows_the_record_or_says_not_recorded(monkeypatch, tmp_path):
    monkeypatch.setenv("ASYNCTC_DATA", str(tmp_path))
    assert D.recorded_outcome(4).startswith("not recorded yet")
    prov = json.loads((ROOT / "data" / "h200" / "pipeline.json").read_text())["provenance"]
    rec = records.Record("pitfalls", prov, {"variants": [{"bug": 4, "words": "bounded wait: consumers timed out on full[0] at tile 0"}]})
    records.save(rec, "h200")
    assert "consumers timed out on full[0] at k-tile 0" in D.recorded_outcome(4)   # an old record's words, renamed
    assert D.recorded_outcome(7).startswith("not recorded yet")


def test_cli_diagnose(capsys):
    from asynctc.__main__ import main
    assert main(["diagnose", "proxy_fence", "--replay"]) == 0
    out = capsys.readouterr().out
    assert "fence.proxy.async" in out and "NVIDIA/Fuser#1967" in out
    assert main(["diagnose", "nope"]) == 2
    assert "unknown bug class" in capsys.readouterr().err


# ---- the suite and tools/gpu_ch08.py ---------------------------------------------------------------

def _fake_run(bug, tiles=8, rng=None):
    words = "ok" if bug in (0, 6) else f"bounded wait: fake {bug}"
    return V.Outcome(bug, V.BUGS[bug][0], words, V.decode_errors([0, 0, 0]), None, [])


def test_measure_pitfalls_with_a_stand_in_gpu(monkeypatch):
    monkeypatch.setattr(V, "run_variant", _fake_run)
    seen = []
    res = suite.measure_pitfalls(sanitizer=False, progress=seen.append, isolate=False)
    assert [v["bug"] for v in res["variants"]] == sorted(V.BUGS) and res["sanitizer"] == []
    assert len(seen) == len(V.BUGS)
    monkeypatch.setattr(V, "run_variant", lambda bug, tiles=8: _fake_run(bug + 1 if bug == 0 else bug))
    with pytest.raises(RuntimeError, match="did not end ok"):
        suite.measure_pitfalls(sanitizer=False, progress=None, isolate=False)


def test_sanitizer_parsing_and_command():
    text = ("========= COMPUTE-SANITIZER\noutcome: ok\n"
            "========= Error: Race reported between Write access at 0x120 in pitfall_ring\n"
            "=========     and Read access at 0x200 in pitfall_ring [512 hazards]\n"
            "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n")
    p = suite.parse_sanitizer(text)
    assert p["errors"] == 1 and p["outcome"] == "ok" and p["excerpt"][0].startswith("Error: Race")
    assert suite.parse_sanitizer("========= ERROR SUMMARY: 0 errors\n")["errors"] == 0
    cmd = suite.sanitizer_command(9, "racecheck", "/x/compute-sanitizer")
    assert cmd[:3] == ["/x/compute-sanitizer", "--tool", "racecheck"] and "run_variant(9" in cmd[-1]
    with pytest.raises(ValueError):
        suite.sanitizer_command(0, "initcheck", "x")
    r = suite.sanitize(0, "memcheck", exe=None) if suite.sanitizer_path() is None else None
    if r is not None:
        assert r["summary"] == "compute-sanitizer not found"


def test_run_isolated_reports_a_crash_in_words(monkeypatch):
    from asynctc.core import runtime
    if runtime.runs_live("sm_90a"):
        pytest.skip("a live GPU is present: the child would run the variant")
    o = suite.run_isolated(0, tiles=2, timeout_s=120)
    assert o["bug"] == 0 and o["key"] == "correct" and o["words"].startswith("crash: ")
    assert "NoGPUError" in o["words"] or "GPU" in o["words"]


def _load_tool():
    path = ROOT / "tools" / "gpu_ch08.py"
    mod = types.ModuleType("_tool_gpu_ch08")
    mod.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), mod.__dict__)
    return mod


def test_gpu_ch08_without_a_gpu_exits_2(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(sys, "path", list(sys.path))
    from asynctc.core import runtime
    if runtime.runs_live("sm_90a"):
        pytest.skip("a live GPU is present")
    mod = _load_tool()
    monkeypatch.setattr(sys, "argv", ["gpu_ch08.py", "--out", str(tmp_path / "o")])
    assert mod.main() == 2
    assert capsys.readouterr().out.startswith("no live sm_90a GPU")


def test_gpu_ch08_dry_run_records(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("ASYNCTC_DATA", str(tmp_path / "data"))
    mod = _load_tool()
    prov = json.loads((ROOT / "data" / "h200" / "pipeline.json").read_text())["provenance"]
    monkeypatch.setattr(records, "provenance_start", lambda: dict(prov))
    monkeypatch.setattr(records, "nvidia_smi_clocks", lambda: {})
    monkeypatch.setattr(suite, "run_isolated", lambda bug, tiles=8: _fake_run(bug).as_dict())
    monkeypatch.setattr(suite, "sanitize", lambda bug, tool: {"bug": bug, "tool": tool, "summary": "ERROR SUMMARY: 0 errors",
                                                          "errors": 0, "excerpt": [], "outcome": "ok", "rc": 0})
    out = tmp_path / "o"
    monkeypatch.setattr(mod, "start", lambda o, long_header=False: (Path(o).mkdir(parents=True, exist_ok=True) or Path(o), lambda s: print(s)))
    monkeypatch.setattr(sys, "argv", ["gpu_ch08.py", "--out", str(out), "--record"])
    assert mod.main() == 0
    doc = json.loads((tmp_path / "data" / "unknown" / "pitfalls.json").read_text())
    assert doc["suite"] == "pitfalls" and len(doc["results"]["variants"]) == len(V.BUGS)
    assert len(doc["results"]["sanitizer"]) == len(suite.SANITIZED) * len(suite.SANITIZER_TOOLS)
    assert (out / "results.json").is_file() and (out / "pitfalls.json").is_file()
    text = capsys.readouterr().out
    assert "BUG= 4 expect_tx" in text and "sanitizer BUG=9 racecheck" in text


# ---- on the GPU ---------------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_variants_end_with_their_errors():
    """Each variant in its own process (suite.run_isolated): a fault in one cannot poison the rest."""
    run = suite.run_isolated
    assert run(0)["words"] == "ok"
    for bug in (1, 3, 4):
        w = run(bug)["words"]
        assert w.startswith("bounded wait"), (bug, w)
    assert "producer timed out on empty[0] at k-tile 0" in run(1)["words"]
    assert "consumers timed out on full[0] at k-tile 0" in run(4)["words"]
    o = run(10)
    assert o["words"].startswith("wrong: first wrong element"), o["words"]
    m = D.layout_mismatch(128, 0, 0)
    assert (o["wrong"]["row"], o["wrong"]["col"]) == (m["row"], m["col"])
    for bug in V.BUGS:                     # none hangs: every one ends in words
        assert run(bug)["words"]


def test_the_core_lesson_does_not_print_its_exercises_answers():
    """Issue 22: a fresh reader found exercise 1's class (expect_tx) diagnosed in §4b and the base-offset
    answer (0, 0) printed in §4c, and no way to find the op `bulk_wait_read`. The core lesson diagnoses
    no expect_tx before its exercises, asks the layout question where no cell printed the answer (the
    deep dive, a 64B reader), and prints ordering.OPS in the repair exercise."""
    src = (ROOT / "notebooks" / "src" / "08_pitfalls.py").read_text()
    learner = src[:src.index("<summary>Solutions")]
    assert "expect_tx_too_large" not in learner and "gpu_outcome(4)" not in learner
    assert "bulk_wait_read" not in learner and "print(ordering.describe_ops())" in learner
    # §3's listing leaves out the kernel's form of exercise 2's answer; the cell after the exercise
    # prints it, and the learner build keeps that cell without its output
    from asynctc.core import notebook
    listing = re.search(r'notebook\.show_source\("pitfalls\.cu", start=(r".*?"), end=(r".*?"),\s*'
                        r'omit=F\.exercises\.LISTING_OMIT\)', learner, re.S)
    from asynctc.pitfalls import exercises as ex08
    shown = notebook.source_excerpt("pitfalls.cu", eval(listing.group(1)), eval(listing.group(2)),
                                    omit=ex08.LISTING_OMIT)
    assert "bulk_wait_group_read" not in shown + learner and "line left out" in shown
    assert "#if BUG" not in shown                   # the correct build, its hooks resolved
    assert re.search(r"# %% output answers a prediction\nif exercises\.after\(\"ch08\.repair\"\):\n"
                     r"    print\(notebook\.build_diff\(\"pitfalls\.cu\", \{\"BUG\": 8\}", learner)
    diff = notebook.build_diff("pitfalls.cu", {"BUG": 8}).splitlines()
    assert diff[:2] == ["--- pitfalls.cu (default build)", "+++ pitfalls.cu (BUG=8)"] and "@@" in diff
    assert [ln for ln in diff[2:] if ln[:1] in "+-"] == ["-    if (tid == 0) bulk_wait_group_read<0>();   "
                                                        "// the previous TMA store has read out_buf"]
    with pytest.raises(ValueError, match="same lines"):
        notebook.build_diff("pitfalls.cu", {"BUG": 0})
    # every op is printed with its argument as the step is written (a newcomer wrote
    # ("bulk_wait_read", None) from a list of bare names)
    from asynctc.pitfalls import ordering as O
    ops = O.describe_ops()
    for op in O.OPS:
        assert re.search(rf'^\("{op}", (None|"\w+"|s|N)\)  ', ops, re.M), op
    assert '("bulk_wait_read", N)' in ops and '("sync", None)' in ops
    deep = (ROOT / "notebooks" / "src" / "08b_pitfalls_on_the_gpu.py").read_text()
    deep_learner = deep[:deep.index("<summary>Solutions")]
    assert 'check("ch08.first_misplaced", answer, base_offset=0, reader_swizzle=64)' in deep_learner
    assert not re.search(r"layout_mismatch\(\s*128\s*,\s*64", src + deep)


def test_the_store_repair_must_wait_before_the_barrier_that_releases_the_writers():
    """The TMA-store buffer: the issuing thread's wait_group.read must come before the barrier that
    lets the other threads rewrite the buffer — after it, the others may already be writing (a
    newcomer's repair put it after the barrier and was graded correct)."""
    from asynctc.pitfalls import ordering as O
    from asynctc.core import exercises
    broken = list(O.PROGRAMS["store"]["broken"])
    good, late = list(broken), list(broken)
    good.insert(5, ("bulk_wait_read", 0))
    late.insert(6, ("bulk_wait_read", 0))
    assert O.check(good) == []
    hz = O.check(late)
    assert [h.rule for h in hz] == ["store"] and "before that barrier" in hz[0].why
    assert exercises.check("ch08.repair", good, rule="store") is True
    assert exercises.check("ch08.repair", late, rule="store") is False
    with pytest.raises(ValueError, match=r"bulk_wait_read takes N"):
        O.check(broken[:5] + [("bulk_wait_read", None)] + broken[5:])
    # a missing or misplaced argument is refused with the exact form to write
    with pytest.raises(ValueError, match=re.escape('write it as ("bulk_wait_read", N), e.g. ("bulk_wait_read", 0)')):
        O.check(broken[:5] + [("bulk_wait_read", None)] + broken[5:])
    with pytest.raises(ValueError, match=re.escape('st needs its argument ("buf"): write it as ("st", "buf")')):
        O.check([("st", None)])
    with pytest.raises(ValueError, match=re.escape('sync takes no argument: write it as ("sync", None)')):
        O.check([("sync", 1)])


def test_the_name_bug_exercise_shows_the_symptom_not_the_cause():
    """Issue 22: exercise 1 printed the ring model's Deadlock, whose why ("tx-count … bytes that no TMA
    in flight will deliver") named the answer; then its counters ("tx-count 1024 bytes") did (readers
    12-13). The learner now sees what a kernel's trace would: who timed out, the arrivals and the
    loads that reached the barrier, no counter; the check still gets the Deadlock and accepts
    exactly expect_tx."""
    shown = F.exercises.mystery_symptom()
    for giveaway in ("expect_tx", "tx-count", "missing", "never", "deliver", "TMA", "why"):
        assert giveaway not in shown, giveaway
    assert "full[0]" in shown and "1 arrival, from the producer" in shown and "init count 1" in shown
    # reader 18: "all 49152 bytes landed" left expect_tx by elimination; the learner now adds up the
    # boxes' bytes (never printed) and compares them with what the producer announced
    assert "announcing 50176 bytes" in shown and "A box 128×64 and a B box 256×64, fp16" in shown
    assert "49152" not in shown and "landed" not in shown
    src = (ROOT / "notebooks" / "src" / "08_pitfalls.py").read_text()
    learner = src[:src.index("<summary>Solutions")]
    assert "print(F.exercises.mystery_symptom())" in learner and "print(mystery)" not in learner
    # §4c shows four rules' hazards; the fifth (the TMA store's) would print exercise 2's missing step
    loop = re.search(r"for rule in \(([^)]*)\)", learner).group(1)
    assert '"store"' not in loop
    mystery = F.exercises.mystery_diagnosis()
    right = [k for k in zoo.BY_KEY if exercises.check("ch08.name_bug", k, diagnosis=mystery)]
    assert right == ["expect_tx"]


def test_ordering_printers_show_programs_and_fixes():
    """Chapter 08 §4c prints each rule's program (numbered steps) and its fix."""
    from asynctc.pitfalls import ordering
    assert ordering.program_text([("st", "out"), ("sync", None)]) == "0 st out · 1 sync"
    progs = ordering.PROGRAMS
    assert ordering.fix_text(progs["proxy"]["broken"], progs["proxy"]["correct"]) == "+ fence_proxy before 1"
    assert ordering.fix_text(progs["init"]["broken"], progs["init"]["correct"]) == "+ fence_init, sync before 1"
    assert ordering.fix_text(progs["leader"]["broken"], progs["leader"]["correct"]) == \
        ordering.program_text(progs["leader"]["correct"])
    assert ordering.fix_text([("st", "out")], [("st", "out"), ("sync", None)]) == "+ sync at the end"
