"""W.rung_diff: what each rung of chapter 06's ladder adds, as a diff of two builds of the source."""

import pytest

from asynctc import warp_specialization as W

# (rung, a word of what it adds that its diff must show, and the rung it was made from)
ADDS = [
    ("ws", "producer", "ch05"),
    ("ws_setmaxnreg", "setmaxnreg_inc<CONSUMER_REGS>", "ws"),
    ("tile", "#define BM 256", "ws_setmaxnreg"),
    ("persistent", "item_step = (int)gridDim.x", "ws_setmaxnreg"),
    ("cluster", "tma_load_2d_multicast", "persistent"),
    ("tma_store", "store_c_tma", "cluster"),
    ("raster", "#define GROUP_M 16", "tma_store"),
]


@pytest.mark.parametrize("name, adds, parent", ADDS)
def test_each_rung_diff_shows_what_it_adds(name, adds, parent):
    assert W.built_from(name).name == parent
    d = W.rung_diff(name, limit=None)
    added = [ln for ln in d.splitlines() if ln.startswith("+")]
    assert added and any(adds in ln for ln in added), d
    assert d.splitlines()[0].startswith(f"// rung {W.RUNG_BY_NAME[name].number} ({name})")


def test_only_the_changed_lines_with_file_line_numbers():
    d = W.rung_diff("tma_store", limit=None)
    text = W.source().splitlines()
    rows = [ln for ln in d.splitlines()[1:] if not ln.startswith(("@@", "//"))]
    assert len(rows) < 60                                    # not the whole 739-line file
    numbered = [ln for ln in rows if ln[1:5].strip().isdigit()]
    assert numbered
    for ln in numbered:                  # a line no switch touched is the file's line, as numbered
        n, code = int(ln[1:5]), ln[7:]
        if "TMA_STORE" not in text[n - 1] and "CLUSTER" not in text[n - 1]:
            assert text[n - 1].split() == code.split(), ln   # (folded blocks are dedented)


def test_the_worklog_view_has_the_same_lines_without_headers():
    """06 §3 prints rung 7's diff without its title and @@ lines: the same +/- rows, hunks parted
    by "...", short enough to sit beside its paragraph (at most 25 lines)."""
    full = W.rung_diff("tma_store", context=0, limit=None).splitlines()
    bare = W.rung_diff("tma_store", context=0, limit=None, headers=False).splitlines()
    assert [ln for ln in bare if ln.strip() != "..."] == [ln for ln in full[1:] if not ln.startswith("@@")]
    assert bare.count("   ...") == sum(ln.startswith("@@") for ln in full) - 1 and len(bare) <= 25
    assert not any(ln.startswith(("@@", "//")) for ln in bare)


def test_a_rung_against_itself_is_empty_and_bad_names_are_refused():
    assert W.rung_diff("cluster", "cluster") == ""
    with pytest.raises(W.WarpSpecializationError, match="rung 1 has no rung before it"):
        W.rung_diff("ch05")
    with pytest.raises(W.WarpSpecializationError, match="name"):
        W.rung_diff("persistant")


def test_the_limit_cuts_and_says_how_many():
    full = W.rung_diff("cluster", limit=None).splitlines()
    cut = W.rung_diff("cluster", limit=20).splitlines()
    assert len(full) > 21 and len(cut) == 22
    assert cut[-1] == f"// ... {len(full) - 21} more diff lines left out (limit=None shows all)"


def test_what_chapter_06_says_each_rung_changes():
    """06 §3's sentence: persistent changes one line (the tile loop's stride), cluster adds the
    multicast load and the remote release, tma_store swaps store_c, raster changes only GROUP_M."""
    def changed(name):
        return [ln for ln in W.rung_diff(name, limit=None).splitlines()[1:] if ln[:1] in "+-"]
    code = [ln for ln in changed("persistent") if "-D" not in ln[:5]]
    assert len(code) == 2 and all("item_step" in ln for ln in code)
    assert any("multicast" in ln for ln in changed("cluster"))
    assert any("mbarrier_arrive_remote" in ln for ln in changed("cluster"))
    store = changed("tma_store")
    assert any("store_c(" in ln for ln in store if ln[0] == "-")
    assert any("store_c_tma(" in ln for ln in store if ln[0] == "+")
    assert [ln.split()[-2:] for ln in changed("raster")] == [["GROUP_M", "8"], ["GROUP_M", "16"]]


def test_only_keeps_the_hunks_a_pattern_names():
    """06 §4 shows one hunk per rung (``only=``): the cluster's multicast load without the barrier
    init that answers exercise 2, which the cell after the exercise shows."""
    load = W.rung_diff("cluster", only="tma_load", context=0)
    assert "tma_load_2d_multicast" in load and "mbarrier_init" not in load and "remote" not in load
    answer = W.rung_diff("cluster", only=r"empty\[s\]|remote", context=0)
    assert "CONSUMERS) * CLUSTER" in answer and "mbarrier_arrive_remote" in answer
    assert "multicast(" not in answer
    assert W.rung_diff("raster", only="no such line") == ""
