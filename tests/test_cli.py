"""The command line, in-process: ``sass`` for every course kernel (cubin compiled here, no GPU),
dtype aliases, one-line errors with exit status 2, ``record --help`` listing the suites, and
doctor's "next" line."""
import re
from pathlib import Path

import pytest

from asynctc import catalog, cp_async, mma_sync, suites, wgmma
from asynctc.__main__ import main

ROOT = Path(__file__).resolve().parent.parent

#: kernel → a SASS class its own function must contain, and one it must not.
SIGNATURE = {
    "mma_sync": ("HMMA", "LDGSTS"),
    "mma_sync_peak": ("HMMA", "LDSM"),
    "cp_async": ("LDGSTS", "STS"),
    "cp_async_smem_pipeline_sync": ("BAR", "LDGSTS"),
    "cp_async_smem_pipeline_async": ("LDGSTS", "HMMA"),
    "tma_load_dump": ("UTMALDG", "LDGSTS"),      # tma.cu holds copy_cp_async too: not counted here
    "tma_store_raw": ("UTMASTG", "LDGSTS"),
    "mbarrier_lifecycle": ("SYNCS", "LDGSTS"),
    "copy_tma": ("UTMALDG", "LDGSTS"),
    "copy_ldg_sts": ("LDG", "UTMALDG"),
    "copy_cp_async": ("LDGSTS", "UTMALDG"),
    "wgmma": ("HGMMA", "HMMA"),
    "wgmma_peak": ("HGMMA", "HMMA"),
    "pipeline": ("HGMMA", "HMMA"),
    "warp_specialization": ("HGMMA", "HMMA"),
    "hopper_gemm": ("HGMMA", "HMMA"),
    "gemm_splitk": ("STG", "HGMMA"),
    "pitfalls": ("UTMALDG", "HGMMA"),
    "tcgen05": ("UTCHMMA", "HGMMA"),
    "tcgen05_pair": ("UTCHMMA", "HGMMA"),
    "tcgen05_persistent": ("UGETNEXTWORKID", "HGMMA"),
    "tcgen05_persistent_pair": ("UTCHMMA", "UTCQMMA"),
    "tcgen05_block_scaled": ("UTCQMMA", "UTCHMMA"),
}

#: kernel → dynamic shared memory its family launches it with (from the family's own config).
DYNAMIC = {
    "mma_sync": mma_sync.DEFAULT_TILE.smem_bytes,
    "cp_async": cp_async.DEFAULT_TILE.smem_bytes,
    "wgmma": wgmma.TileConfig("float16", 128).shmem_bytes,
    "mma_sync_peak": 0,
    "cp_async_smem_pipeline_sync": 0,
    "gemm_splitk": 0,
}


def _classes(out: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^    (\w+)\s+(\d+)$", out, re.M)}


def test_the_catalogue_covers_the_course():
    from asynctc import tma
    assert set(SIGNATURE) == set(catalog.COURSE_KERNELS)
    assert set(tma.KERNELS) <= set(catalog.COURSE_KERNELS)


@pytest.mark.parametrize("kernel", list(catalog.COURSE_KERNELS))
def test_sass_knows_every_course_kernel(capsys, kernel):
    assert main(["sass", kernel]) == 0
    out = capsys.readouterr().out
    ck = catalog.COURSE_KERNELS[kernel]()
    assert out.startswith(f"{ck.name} [{ck.arch}] from kernels/{ck.source} — {kernel}: "), out
    m = re.search(r"shared memory  (\d+) B per CTA = (\d+) B static \+ (\d+) B dynamic", out)
    assert m, out
    total, static, dynamic = map(int, m.groups())
    assert total == static + dynamic and static == ck.resources.shared_bytes
    assert dynamic == ck.dynamic_smem_bytes
    if kernel in DYNAMIC:
        assert dynamic == DYNAMIC[kernel]
    elif kernel not in ("cp_async_smem_pipeline_async",):
        assert dynamic > 0, f"{kernel} is launched with dynamic shared memory"
    has, lacks = SIGNATURE[kernel]
    counts = _classes(out)
    assert counts.get(has, 0) > 0 and lacks not in counts, counts


def test_the_64_kib_kernel_shows_its_dynamic_shared_memory(capsys):
    assert main(["sass", "mma_sync"]) == 0
    assert "65536 B per CTA = 0 B static + 65536 B dynamic (64.0 KiB)" in capsys.readouterr().out


@pytest.mark.parametrize("kernel,alias,code", [
    ("mma_sync", "fp16", "DT=0"), ("mma_sync", "half", "DT=0"), ("mma_sync", "BF16", "DT=1"),
    ("cp_async", "bfloat16", "DT=1"), ("mma_sync_peak", "f16", "DT=0"),
    ("wgmma", "fp8", "DT=2"), ("wgmma", "e4m3", "DT=2"), ("wgmma", "e5m2", "DT=3"),
    ("wgmma_peak", "bf16", "DT=1"),
])
def test_dtype_aliases(capsys, kernel, alias, code):
    assert main(["sass", kernel, "--dtype", alias]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"defines .*\b{code}\b", out), out
    if "DT=2" in code or "DT=3" in code:
        assert "QGMMA" in out


@pytest.mark.parametrize("argv,words", [
    (["sass", "mma_sync", "--dtype", "fp32"], "--dtype fp32: mma_sync takes float16 (fp16, f16, half), "
                                               "bfloat16 (bf16)"),
    (["sass", "mma_sync", "--dtype", "fp8"], "--dtype fp8: mma_sync takes float16"),
    (["sass", "copy_tma", "--dtype", "fp16"], "--dtype fp16: copy_tma has no dtype choice"),
])
def test_bad_dtype_is_one_line_and_exit_2(capsys, argv, words):
    assert main(argv) == 2
    cap = capsys.readouterr()
    err = cap.err.strip()
    assert err.startswith(words) and "\n" not in err and "Traceback" not in err, err
    assert cap.out == ""


def test_unknown_kernel_lists_the_choices(capsys):
    with pytest.raises(SystemExit) as e:
        main(["sass", "gemm"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'gemm'" in err and all(k in err for k in catalog.COURSE_KERNELS)


def test_sass_help_lists_kernels_and_dtypes(capsys):
    with pytest.raises(SystemExit) as e:
        main(["sass", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for k in catalog.COURSE_KERNELS:
        assert re.search(rf"^  {k}\s", out, re.M), k
    assert "float8_e4m3fn" in out and "fp16/f16/half" in out


def test_record_help_lists_the_suites(capsys):
    with pytest.raises(SystemExit) as e:
        main(["record", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert suites.SUITES
    for name in suites.SUITES:
        assert re.search(rf"^  {name}\s", out, re.M), name


def test_record_unknown_suite_is_one_line_and_exit_2(capsys):
    assert main(["record", "nosuch"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("unknown suite 'nosuch'") and "\n" not in err


def test_doctor_next_line_names_the_other_command(capsys):
    assert main(["doctor", "--in-course"]) == 0
    nxt = [x for x in capsys.readouterr().out.splitlines() if x.startswith("next")]
    assert len(nxt) == 1 and "jupyter lab" in nxt[0] and "course.sh" not in nxt[0], nxt
    assert main(["doctor"]) == 0
    nxt = [x for x in capsys.readouterr().out.splitlines() if x.startswith("next")]
    assert len(nxt) == 1 and "tools/course.sh" in nxt[0], nxt
    assert 'asynctc doctor --in-course "$@"' in (ROOT / "tools" / "course.sh").read_text()


def test_doctor_in_course_says_what_course_will_run(capsys):
    """`course.sh 00` runs chapter 00 only: doctor's next line says so, not "every chapter"."""
    assert main(["doctor", "--in-course"]) == 0
    assert "executing every chapter now" in capsys.readouterr().out
    assert main(["doctor", "--in-course", "--timeout", "60", "00"]) == 0
    nxt = [x for x in capsys.readouterr().out.splitlines() if x.startswith("next")]
    assert len(nxt) == 1 and "executing chapter 00 (00_why_async" in nxt[0] and "every" not in nxt[0], nxt


def test_record_help_columns_line_up(capsys):
    with pytest.raises(SystemExit):
        main(["record", "--help"])
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if re.match(r"^  \w+\s+sm_\d+a\s", ln)]
    assert len(rows) == len(suites.SUITES)
    assert len({ln.index("sm_") for ln in rows}) == 1, rows             # arch column aligned
    assert len({ln.index("asynctc.") for ln in rows}) == 1, rows        # module column aligned


def test_sass_tcgen05_counts_the_chapters_classes(capsys):
    """``sass tcgen05`` counts the family's own classes (asynctc.tcgen05.SASS_CLASSES), the ones
    chapter 09's sass_summary prints."""
    from asynctc import tcgen05
    assert main(["sass", "tcgen05"]) == 0
    out = capsys.readouterr().out
    assert "asynctc.tcgen05.SASS_CLASSES" in out
    sm = tcgen05.sass_summary(tcgen05.GemmConfig("float16", 128, 256, 64, 4, 1))
    assert _classes(out) == {k: v for k, v in sm.items() if k in tcgen05.SASS_CLASSES and v}


def test_course_html_leaves_out_the_solutions():
    """The course command's HTML drops cells tagged "solution" (and code cells that check with
    solution=True); the executed notebook keeps them."""
    pytest.importorskip("nbconvert")
    import nbformat
    from asynctc.__main__ import html_without_solutions
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("Exercise: what is 6 × 7?"),
                nbformat.v4.new_code_cell("answer = ...  # LEARNER_CELL"),
                nbformat.v4.new_markdown_cell("<details><summary>Solutions</summary>SOLUTION_HEADING</details>",
                                              metadata={"tags": ["solution"]}),
                nbformat.v4.new_code_cell("exercises.check('x', 42, solution=True)  # UNTAGGED_SOLUTION"),
                nbformat.v4.new_code_cell("print(42)  # TAGGED_SOLUTION", metadata={"tags": ["solution"]})]
    html = html_without_solutions(nb)
    assert "LEARNER_CELL" in html and "6 × 7" in html
    for hidden in ("SOLUTION_HEADING", "UNTAGGED_SOLUTION", "TAGGED_SOLUTION"):
        assert hidden not in html
    assert len(nb.cells) == 5 and "tags" not in nb.cells[3].metadata       # the notebook is unchanged


@pytest.mark.parametrize("name", sorted(p.stem + ".ipynb" for p in (ROOT / "notebooks" / "src").glob("[0-9][0-9]*_*.py")
                                         if "solution=True" in p.read_text()))      # core lessons; deep dives with exercises
def test_built_notebooks_tag_their_solutions(name):
    """The solution notebook tags its solutions (heading and every solution=True cell); the learner
    notebook has none of them."""
    import json
    cells = json.loads((ROOT / "notebooks" / "solutions" / name).read_text())["cells"]
    sol = [c for c in cells if "solution" in c.get("metadata", {}).get("tags", [])]
    assert any(c["cell_type"] == "markdown" and "<summary>Solutions" in "".join(c["source"]) for c in sol)
    assert all("solution" in c.get("metadata", {}).get("tags", [])
               for c in cells if c["cell_type"] == "code" and "solution=True" in "".join(c["source"]))
    learner = json.loads((ROOT / "notebooks" / name).read_text())["cells"]
    assert not [c for c in learner if "solution" in c.get("metadata", {}).get("tags", [])
                or "solution=True" in "".join(c["source"]) or "<summary>Solutions" in "".join(c["source"])]
    answers = [c for c in learner if "answer" in c.get("metadata", {}).get("tags", [])]
    assert all(not c.get("outputs") for c in answers), "a learner notebook shows a prediction's answer"


def test_doctor_groups_the_notebooks_by_mode(capsys):
    """One line per mode, not one per notebook: every notebook is named once, in course order."""
    from asynctc.__main__ import chapters
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out.splitlines()
    first = next(i for i, x in enumerate(out) if x.startswith("notebooks"))
    rows = [out[first]] + [x for x in out[first + 1:] if x.startswith(" " * 13) and ":" in x]
    keys = [k for r in rows for k in r.split(":", 1)[1].split()]
    assert sorted(keys) == sorted(nb.stem.split("_")[0] for nb in chapters())
    assert len(rows) <= 4 and all(("replay (" in r or "live (" in r) for r in rows), rows
