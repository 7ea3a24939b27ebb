"""The GEMM's goals judged from a matmul_host record: one slow shape misses its goal, an
unmeasured class is never 'met', the figure draws every row (CPU, synthetic rows)."""
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from asynctc.gemm import figures, goals, host_suite  # noqa: E402


def _rows(seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for cls, shape in host_suite.table():
        for dt in host_suite.HOST_DTYPES:
            for st in host_suite.HOST_B_STORAGE:
                m, n, k = shape
                out.append({"class": cls, "m": m, "n": n, "k": k, "dtype": dt, "b_storage": st,
                            "kernel_of_torch": 1.05 + 0.1 * rng.random(),
                            "e2e_of_torch": 1.0 + 0.1 * rng.random(),
                            "host_ratio": 0.5 + 0.4 * rng.random()})
    return out


def test_every_goal_met_on_good_rows():
    js = goals.judge(_rows())
    assert [j["met"] for j in js] == [True] * len(goals.GOALS)
    assert all(j["rows"] > 0 for j in js)


@pytest.mark.parametrize("g", range(len(goals.GOALS)))
def test_one_bad_row_misses_its_goal(g):
    goal = goals.GOALS[g]
    rows = _rows(1)
    victim = next(r for r in rows if goal.rows(r) and r["dtype"] == "bfloat16")
    victim[goal.quantity] = goal.bound + (0.01 if goal.at_most else -0.01)
    j = goals.judge(rows)[g]
    assert j["met"] is False
    assert j["worst_row"] == goals.row_label(victim)
    assert j["worst"] == pytest.approx(victim[goal.quantity])
    assert "**no**" in goals.goals_table(rows)


def test_unmeasured_class_is_not_met():
    rows = [r for r in _rows() if r["class"] != "decode"]
    j = {x["goal"]: x for x in goals.judge(rows)}
    d = j["decode M 1–16, kernel time"]
    assert d["rows"] == 0 and d["met"] is None
    assert "not measured" in goals.goals_table(rows)


def test_compact_table_drops_only_the_worst_shape_column():
    """The core lesson's compact table: the same rows, verdicts and values, without the "at"
    column; an unmeasured class keeps its row."""
    rows = [r for r in _rows() if r["class"] != "decode"]
    full = [line.split(" | ") for line in goals.goals_table(rows).splitlines()]
    compact = [line.split(" | ") for line in goals.goals_table(rows, compact=True).splitlines()]
    assert compact[0] == ["| goal", "bound", "worst measured", "met |"] and len(compact) == len(full)
    for f, c in zip(full[2:], compact[2:]):
        assert c == f[:3] + f[4:] or (c[2].startswith("not measured") and f[2].startswith("not measured"))
    assert not any(j["worst_row"] in goals.goals_table(rows, compact=True) for j in goals.judge(rows)
                   if j["worst_row"])


def test_figure_draws_every_row_and_clips():
    rows = _rows()
    rows[-1]["kernel_of_torch"] = 4.8
    ax = figures.plot_matmul_ratios(rows)
    pts = [len(line.get_xdata()) for line in ax.get_lines() if line.get_marker() in ("o", "x")]
    assert pts == [len(rows), len(rows)]
    assert [t.get_text() for t in ax.texts if "×" in t.get_text()] == ["4.8×"]   # one per clipped run
    assert figures.worst_rows(rows, 1)[0].endswith(f"{min(r['kernel_of_torch'] for r in rows):.2f}")


def test_the_gemm_page_states_what_the_matmul_host_record_holds():
    """docs/gemm.md's goals table is goals_table of the committed record, and its host-time sentence's
    spans are the record's (a re-measurement that moves them fails here until the page follows)."""
    from pathlib import Path
    from asynctc.core import records
    page = (Path(__file__).resolve().parent.parent / "docs" / "gemm.md").read_text()
    rows = records.load("matmul_host").results["rows"]
    assert goals.goals_table(rows) in page
    padded = [r for r in rows if (r["k"] * 2) % 16 or ((r["n"] * 2) % 16 and r["b_storage"] == "KxN")]
    aligned = [r for r in rows if r not in padded]
    span = lambda xs: f"{min(xs):.0f}–{max(xs):.0f} µs"  # noqa: E731
    assert f"Host time per call is {span([r['ours_host_us'] for r in aligned])} against torch's " \
        f"{span([r['torch_host_us'] for r in aligned])}" in page.replace("\n", " ")
    assert all(r["host_ratio"] <= 1.0 for r in aligned)
    e2e = [r["e2e_of_torch"] for r in rows if r["m"] == 4095]
    assert f"{min(e2e):.1f}–{max(e2e):.1f}× faster than cuBLAS end to end at 4095³" in page.replace("\n", " ")
