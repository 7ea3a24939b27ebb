"""Chapter 06 §3: rung 2 → rung 3 in single changes (rung3_split.py) and the "Design it" model
(design.py), on the committed records. CPU only: the one compile is NVRTC to a cubin."""

import copy
import re
from pathlib import Path

import pytest

from asynctc import warp_specialization as W
from asynctc.core import notebook, records
from asynctc.warp_specialization.design import all_designs


@pytest.fixture(scope="module")
def ladder():
    return records.load("warp_specialization").results


def test_rung3_steps_are_single_changes_read_from_the_record(ladder):
    steps = {d["step"]: d for d in W.rung3_steps(ladder, 4096, compile_untimed=False)}
    assert list(steps) == ["2", "a", "b", "3"]
    two, split, plain, three = (steps[k] for k in ("2", "a", "b", "3"))
    # each step changes one knob of the config before it
    assert (two["config"].consumers, split["config"].consumers) == (1, 2)
    assert split["config"].bn == 128 and three["config"].bn == 256
    assert plain["config"].replace(setmaxnreg=True) == three["config"]
    assert three["config"] == W.RUNG_BY_NAME["ws_setmaxnreg"].make("float16")
    assert two["config"] == W.RUNG_BY_NAME["ws"].make("float16")
    # timed rows: per clock = TFLOP/s over SMs × in-flight MHz; b never timed
    assert plain["tflops"] is None and plain["regs"] is None
    for d in (two, split, three):
        assert d["per_clk"] == pytest.approx(d["tflops"] * 1e12 / (132 * d["mhz"] * 1e6))
        assert 0 < d["per_clk"] < 4096 and d["spill_bytes"] == 0
    # chapter 00 §4: 128×128 needs all of shared memory's 128 B/clk, 128×256 three quarters
    assert (split["smem_share"], three["smem_share"]) == (1.0, 0.75)
    assert split["per_clk"] / two["per_clk"] - 1 < 0.05 < three["per_clk"] / split["per_clk"] - 1


def test_the_untimed_step_compiles_without_spills_under_the_entry_count(ladder):
    plain = next(d for d in W.rung3_steps(ladder, 4096) if d["step"] == "b")
    assert plain["entry"] == 168 and plain["spill_bytes"] == 0 and plain["regs"] <= plain["entry"]
    text = W.rung3_table(W.rung3_steps(ladder, 4096))
    assert "not timed" in text and re.search(r"\+\d+\.\d%", text) and "100%" in text and "75%" in text


def test_rung3_table_for_a_record_without_the_middle_step(ladder):
    res = copy.deepcopy(ladder)
    res["rows"] = [r for r in res["rows"] if "128x128x64/c2" not in (r.get("label") or "")]
    steps = W.rung3_steps(res, 4096, compile_untimed=False)
    assert steps[1]["tflops"] is None
    assert W.rung3_table(steps).count("not timed") == 2


def test_design_rung3_within_ten_percent_per_clock():
    d = W.design(bn=256, stages=4)
    assert d.config == W.RUNG_BY_NAME["ws_setmaxnreg"].make("float16")
    assert d.tiles_per_sm == 4 and len(d.runs) >= 2 and abs(d.error) < 0.10
    assert d.model_us == pytest.approx(d.busy / d.mhz) and d.busy == 4 * d.tile_cycles
    assert "model / record" in d.text() and "µs at" in str(d)
    # per clock and per time agree when the clock is the same
    assert d.ratio == pytest.approx(d.record / d.model, rel=0.02)


def test_design_knobs_move_the_model_the_way_the_kernel_does():
    base = W.design(256, 4)
    pers = W.design(256, 4, persistent=True)
    store = W.design(256, 4, tma_store=True)
    assert pers.tile_cycles == base.tile_cycles and pers.model > base.model      # prologue hidden
    assert store.epilogue < base.epilogue and store.model > base.model           # traced epilogues
    assert W.design(128, 4).tiles_per_sm == 8


def test_design_refuses_what_it_cannot_predict():
    with pytest.raises(W.WarpSpecializationError, match="bn"):
        W.design(bn=64)
    with pytest.raises(W.WarpSpecializationError, match="size"):
        W.design(size=1000)
    with pytest.raises(W.WarpSpecializationError, match="stages"):
        W.design(bn=256, stages=6)                  # 6 stages of 48 KiB do not fit


def test_never_timed_design_says_so():
    d = W.design(256, 2)
    assert d.record is None and d.error is None and d.model_us is None and "never timed" in d.text()


def test_survey_generates_its_conclusions_from_the_numbers():
    text = W.design_survey()
    assert "128×256: the model's time lies within" in text
    assert "fitted on 128×256" in text                # the 128×128 misses, explained by the fit
    rows = [d for d in all_designs() if d.runs]
    assert len(rows) >= 5 and all(d.config.consumers == 2 for d in rows)


# ---- 06 §3's cells: their sentences hold on the record and refuse a record that moved ------------

def _cell(marker: str) -> str:
    src = (Path(__file__).resolve().parent.parent / "notebooks" / "src" / "06_warp_specialization.py").read_text()
    (cell,) = [c for c in re.split(r"(?m)^# %%.*$", src) if marker in c]
    return cell


def _run(marker: str, res: dict) -> None:
    exec(compile(_cell(marker), "06", "exec"), {"W": W, "notebook": notebook, "records": records,  # noqa: S102
                                                 "res": res})


def _scaled(ladder: dict, rung: int, f: float) -> dict:
    res = copy.deepcopy(ladder)
    for r in res["ladder"]:
        if r["rung"] == rung:
            r["tflops"] *= f
    return res


def test_the_ladder_cells_hold_on_the_record(ladder, capsys):
    _run("W.rung3_steps(res, 4096)", ladder)
    _run("r2, r3, r5, r7, r8 =", ladder)
    _run("W.epilogue_note(res", ladder)
    out = capsys.readouterr().out
    assert "setmaxnreg is not what lets the tile widen" in out and "the ladder's biggest step" in out
    assert "The TMA store saves (" in out


@pytest.mark.parametrize("rung,f", [(3, 1.05),      # the split alone bought 5 %
                                    (2, 1.15),      # half the tile, as fast as chapter 05's
                                    (6, 1.03),      # clusters moved something
                                    (7, 0.95)])     # the TMA store no longer the biggest step
def test_the_ladder_cell_refuses_a_record_that_moved(ladder, rung, f):
    with pytest.raises(notebook.ClaimError):
        _run("r2, r3, r5, r7, r8 =", _scaled(ladder, rung, f))


def test_the_split_cell_refuses_a_wider_tile_that_bought_nothing(ladder):
    res = copy.deepcopy(ladder)
    for r in res["rows"]:
        if r.get("label") == W.RUNG_BY_NAME["ws_setmaxnreg"].make("float16").label() and r["size"] == 4096:
            r["tflops"] *= 0.88                                       # 128×256 no faster than 128×128
    with pytest.raises(notebook.ClaimError):
        _run("W.rung3_steps(res, 4096)", res)
