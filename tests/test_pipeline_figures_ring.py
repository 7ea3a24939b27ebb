"""Chapter 05 §1's ring step by step (:mod:`asynctc.pipeline.figures_ring`): the logged run is the
ring model's own run, every wait names the kernel's parity, the panels of S = 2 over 4 k-tiles are
the expected ones, and the figure draws them."""
import pytest

from asynctc.models import pipeline as mp
from asynctc.pipeline import figures_ring as fr


@pytest.mark.parametrize("S,C,K", [(1, 1, 3), (2, 1, 4), (2, 2, 6), (3, 1, 7), (4, 2, 9)])
def test_log_is_the_models_run_and_waits_name_the_kernels_parity(S, C, K):
    tile = mp.Tile()
    sim = fr._LoggedRing(S, 0, C, K, mp.HardwareParams.from_records(tile), "correct", tile)
    sim.run()
    assert sim.diagnosis is None
    assert sorted(sim.spans) == sorted(mp.simulate(S, 0, C, K).spans)     # logging changes nothing
    waits = [e for e in sim.log if e.kind == "wait"]
    assert len([e for e in waits if e.barrier.startswith("full")]) == C * K
    assert len([e for e in waits if e.barrier.startswith("empty")]) == K
    for e in waits:
        fill = e.k // S
        assert e.stage == e.k % S and e.barrier.endswith(f"[{e.stage}]")
        assert e.parity == (fill % 2 if e.barrier.startswith("full") else (fill + 1) % 2)
    lands = [e for e in sim.log if e.kind == "land"]
    assert [e.k for e in lands] == list(range(K)) and all(e.phase == e.k // S + 1 for e in lands)


def test_moments_agree_with_the_barriers():
    for S, C, K in ((2, 1, 4), (3, 2, 8)):
        moments, diagnosis = fr.ring_moments(S, K, C)
        assert diagnosis is None
        for m in moments:
            for who, bar, parity, passed in m.waits:          # passes iff the open phase has the other parity
                assert passed == (m.phases[bar] % 2 != parity)
            for s, (k, fill, state) in enumerate(m.stages):
                assert k is None or (k % S, fill) == (s, k // S)
                if state in ("full", "read", "free"):        # its bytes landed: full[s] past that fill
                    assert m.phases[f"full[{s}]"] >= fill + 1
        assert all(m.phases[f"{b}[{s}]"] == len(range(s, K, S)) for b in ("full", "empty")
                   for s in range(S) for m in moments[-1:])


#: S = 2, one consumer, 4 k-tiles: each panel's events (kind, who or k-tile) and its words.
EXPECTED = [
    ("wait pass issue wait pass issue", "producer loads k-tiles 0, 1 into stages 0, 1 (the prologue: "
                                        "no wait, the stages start empty)"),
    ("wait", "consumer waits on full[0]: blocked"),
    ("land pass", "k-tile 0 lands: full[0] completes phase 0; consumer's wait passes: wgmma reads k-tile 0"),
    ("land", "k-tile 1 lands: full[1] completes phase 0"),
    ("release wait pass issue", "consumer's wgmmas done, it arrives on empty[0]: phase 0 completes; "
                                "producer loads k-tile 2 into stage 0"),
    ("wait pass", "consumer's wait on full[1] passes: wgmma reads k-tile 1"),
    ("land", "k-tile 2 lands: full[0] completes phase 1"),
    ("release wait pass issue", "consumer's wgmmas done, it arrives on empty[1]: phase 0 completes; "
                                "producer loads k-tile 3 into stage 1"),
    ("wait pass", "consumer's wait on full[0] passes: wgmma reads k-tile 2"),
    ("land", "k-tile 3 lands: full[1] completes phase 1"),
    ("release wait pass", "consumer's wgmmas done, it arrives on empty[0]: phase 1 completes; "
                          "consumer's wait on full[1] passes: wgmma reads k-tile 3"),
    ("release", "consumer's wgmmas done, it arrives on empty[1]: phase 1 completes"),
]


def test_panels_of_two_stages_over_four_k_tiles():
    moments, _ = fr.ring_moments(2, 4)
    assert [(" ".join(e.kind for e in m.events), fr._words(m, 2)) for m in moments] == EXPECTED
    waits = [w for m in moments for w in m.waits]
    assert waits[:3] == [("producer", "empty[0]", 1, True), ("producer", "empty[1]", 1, True),
                         ("consumer", "full[0]", 0, False)]
    assert [m.stages[0][2] for m in moments] == ["loading", "loading", "read", "read", "loading", "loading",
                                                 "full", "full", "read", "read", "free", "free"]


def test_figure_draws_every_moment_and_a_broken_ring_its_diagnosis():
    import matplotlib
    matplotlib.use("Agg")
    fig = fr.plot_ring_steps()
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.get_title(loc="left")]
    assert len(titles) == len(EXPECTED) and titles[0].startswith("1. Producer loads")
    suptitle = " ".join(fig._suptitle.get_text().split())            # its lines are wrapped
    assert "S = 2 stages, 4 k-tiles" in suptitle
    assert "producer is thread 0 of consumer warpgroup 0" in suptitle
    # the title owns that it draws wait_group 0 (panel 5 releases before panel 6 reads), and leaves
    # exercise 1's answer (wait_group 1) unsaid
    assert fr.SIMPLEST_ORDER in suptitle and "wait_group 0" in fr.SIMPLEST_ORDER
    assert "wait_group 1" not in suptitle
    assert "arrives on empty[0]" in titles[4] and "reads k-tile 1" in titles[5].replace("\n", " ")
    lefts = sorted({round(ax.get_position().x0, 2) for ax in fig.axes})
    assert len(lefts) == 3 and len(fig.axes) == 12          # 12 panels, 3 columns of 4 rows
    from asynctc.pipeline.launch import source
    assert "const bool producer = tid == 0;" in source()   # the kernel's producer, as the title says
    texts = " ".join(t.get_text() for t in fig.axes[1].texts)
    assert "consumer waits,\nparity 0: BLOCKED" in texts and "full[0]\nphase 0 open\nparity 0" in texts
    first = " ".join(t.get_text() for t in fig.axes[0].texts)   # the kernel's prologue waits on nothing
    assert "producer waits" not in first and "stage 0\nk-tile 0" in first
    assert "producer waits,\nparity 0: passes" in " ".join(t.get_text() for t in fig.axes[4].texts)
    broken = fr.plot_ring_steps(protocol="wrong_empty_parity", cols=2)
    words = " ".join(t.get_text() for ax in broken.axes for t in ax.texts)
    assert "producer waits,\nparity 0: BLOCKED" in words and "Deadlock" in words
    for f in (fig, broken):                  # the title fits the figure's width (a reader saw it clipped)
        f.canvas.draw()
        box = f._suptitle.get_window_extent(f.canvas.get_renderer())
        assert 0 <= box.x0 and box.x1 <= f.bbox.x1 and box.y1 <= f.bbox.y1, (box, f.bbox)


def test_exercise_2_with_the_parity_flipped_goes_wrong_at_the_first_refill():
    moments, diagnosis = fr.ring_moments(2, 4, parities=fr.flipped_refill_parities())
    assert [fr._words(m, 2) for m in moments[:4]] == [w for _, w in EXPECTED[:4]]   # the prologue is the kernel's
    last = moments[-1]
    assert len(moments) == 5 and last.waits == (("producer", "empty[0]", 1, False),)
    assert last.phases["empty[0]"] % 2 == 1                  # it names the open phase: blocked for good
    assert (diagnosis.iteration, diagnosis.barrier, diagnosis.stage, diagnosis.parity) == (2, "empty", 0, 1)
    fig = fr.plot_ring_steps(parities=fr.flipped_refill_parities(), broken="flipped")
    assert "BROKEN: flipped" in " ".join(fig._suptitle.get_text().split())
    assert any("6. Deadlock" in t.get_text() for ax in fig.axes for t in ax.texts)
