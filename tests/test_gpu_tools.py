"""The one-command GPU scripts that share tools/gpu_common.py (gpu_ch05, gpu_ch06, gpu_ch07,
gpu_matmul, gpu_swizzle), proven on the CPU: their command lines are those of the scripts before
the refactor (commit BEFORE, read with git), each stops with exit 2 and one line without a live
sm_90a GPU, gpu_common.record_suite writes, saves, prints and fails as the scripts did, and each
script's main() — driven with a stand-in GPU (device, record provenance and the family's measure
and summary functions faked) — prints the same lines, writes the same files and returns the same
exit code as its version at BEFORE, for the full run, --record, --quick and a failing measurement.
"""
import argparse
import dataclasses
import json
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from asynctc import fp8, gemm as G, pipeline as P, swizzle as S, warp_specialization as W
from asynctc.core import records, runtime

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"
SCRIPTS = ("gpu_ch05", "gpu_ch06", "gpu_ch07", "gpu_matmul", "gpu_swizzle")
#: main before the five scripts shared tools/gpu_common.py
BEFORE = "d961c2fad769bf600bc880e2bebe3375697321b0"

#: options (after -h) of each script's command line, frozen here too so that the check holds
#: where git history is absent
OPTIONS = {
    "gpu_ch05": ["--out", "--record", "--quick", "--sizes"],
    "gpu_ch06": ["--out", "--record", "--quick", "--rungs", "--sizes", "--pingpong", "--gantt"],
    "gpu_ch07": ["--out", "--record", "--quick", "--sizes", "--fit", "--swizzle", "--intervals"],
    "gpu_matmul": ["--out", "--record", "--quick", "--reps"],
    "gpu_swizzle": ["--out", "--record", "--quick", "--no-ncu", "--ncu-child", "--sizes"],
}
#: options added on purpose since BEFORE (each with its own test below): compared without them
ADDED = {"gpu_ch06": ["--pingpong", "--gantt"], "gpu_ch07": ["--fit", "--swizzle", "--intervals"]}
#: (--pingpong, --gantt: tests/test_ws_pingpong.py; --intervals: tests/test_fp8_intervals.py)
SUITE = {"gpu_ch05": "pipeline", "gpu_ch06": "warp_specialization", "gpu_ch07": "fp8",
         "gpu_matmul": "matmul", "gpu_swizzle": "swizzle"}


def _old_source(name: str) -> str:
    try:
        r = subprocess.run(["git", "show", f"{BEFORE}:tools/{name}.py"], cwd=ROOT,
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"git not usable here: {e}")
    if r.returncode != 0:
        pytest.skip(f"commit {BEFORE[:7]} not in this checkout's history: {r.stderr.strip()}")
    return r.stdout


def _load(name: str, source: str | None = None) -> types.ModuleType:
    """The script as a module (``source``: another version of it, run as if it were the file)."""
    path = TOOLS / f"{name}.py"
    mod = types.ModuleType(f"_tool_{name}")
    mod.__file__ = str(path)
    exec(compile(source if source is not None else path.read_text(), str(path), "exec"),
         mod.__dict__)
    return mod


@pytest.fixture
def clean(monkeypatch, tmp_path):
    """sys.path and sys.argv restored after the test; no $OUT; records go under tmp_path."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.delenv("OUT", raising=False)
    monkeypatch.setenv("ASYNCTC_DATA", str(tmp_path / "data"))
    return tmp_path


# ---- (a) the command lines ----------------------------------------------------------------------

class _Parsed(Exception):
    pass


def _parser(mod, monkeypatch) -> argparse.ArgumentParser:
    """The parser main() builds, caught at parse_args (nothing after it runs)."""
    def caught(self, *a, **k):
        raise _Parsed(self)
    with monkeypatch.context() as m:
        m.setattr(argparse.ArgumentParser, "parse_args", caught)
        with pytest.raises(_Parsed) as e:
            mod.main()
    return e.value.args[0]


def _without_added(name: str, ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``ap`` with the options of ADDED[name] taken out (so the rest compares with BEFORE)."""
    for opt in ADDED.get(name, ()):
        action = ap._option_string_actions.pop(opt)
        ap._remove_action(action)
        for group in ap._action_groups:
            if action in group._group_actions:
                group._group_actions.remove(action)
    return ap


def _help_without_added(name: str, text: str) -> str:
    """A --help text with the ADDED options' usage token and help lines taken out."""
    for opt in ADDED.get(name, ()):
        text = text.replace(f" [{opt}]", "")
        lines, out, skip = text.splitlines(keepends=True), [], False
        for ln in lines:
            if ln.startswith(f"  {opt}"):
                skip = True
                continue
            if skip and ln.startswith("    "):
                continue
            skip = False
            out.append(ln)
        text = "".join(out)
    # a usage line wrapped only for the added options is left blank but for its indent
    return "".join(ln for ln in text.splitlines(keepends=True) if ln.strip() or ln == "\n")


def _options(ap: argparse.ArgumentParser) -> list[tuple]:
    return [(a.option_strings, a.dest, type(a).__name__, a.default, a.type, a.nargs, a.const,
             a.required, a.choices, a.help, a.metavar) for a in ap._actions]


@pytest.mark.parametrize("name", SCRIPTS)
def test_options_are_the_frozen_ones(name, clean, monkeypatch):
    ap = _parser(_load(name), monkeypatch)
    assert [a.option_strings[-1] for a in ap._actions] == ["--help"] + OPTIONS[name]
    out = next(a for a in ap._actions if a.dest == "out")
    assert out.default == "out_" + name.removeprefix("gpu_")
    rec = next(a for a in ap._actions if a.dest == "record")
    assert rec.help == f"write data/<gpu>/{SUITE[name]}.json"
    monkeypatch.setenv("OUT", "/some/where")
    out = next(a for a in _parser(_load(name), monkeypatch)._actions if a.dest == "out")
    assert out.default == "/some/where"


@pytest.mark.parametrize("name", SCRIPTS)
def test_options_unchanged_since_before(name, clean, monkeypatch):
    """Every option's strings, dest, action, default, type, help ... and the --help text equal the
    script's at BEFORE, with and without $OUT."""
    old = _old_source(name)
    sys.argv = [f"{name}.py"]
    monkeypatch.setenv("COLUMNS", "100")
    for env_out in (None, "/some/where"):
        if env_out:
            monkeypatch.setenv("OUT", env_out)
        new_ap = _without_added(name, _parser(_load(name), monkeypatch))
        old_ap = _parser(_load(name, old), monkeypatch)
        assert _options(new_ap) == _options(old_ap)
        assert new_ap.format_help() == old_ap.format_help()
        assert new_ap.description == old_ap.description


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_in_a_subprocess_is_unchanged(name):
    """`python tools/<name>.py --help` as the lead runs it (imports resolve from a plain command
    line) prints what the version at BEFORE printed."""
    old = _old_source(name)
    env = {"COLUMNS": "100", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    new = subprocess.run([sys.executable, str(TOOLS / f"{name}.py"), "--help"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    run_old = ("import sys; src = sys.stdin.read(); sys.argv = [sys.argv[1], '--help']; "
               "exec(compile(src, sys.argv[0], 'exec'), {'__name__': '__main__', '__file__': "
               "sys.argv[0]})")
    was = subprocess.run([sys.executable, "-c", run_old, str(TOOLS / f"{name}.py")], cwd=ROOT,
                         env=env, input=old, capture_output=True, text=True, timeout=120)
    assert new.returncode == was.returncode == 0, (new.stderr, was.stderr)
    assert _help_without_added(name, new.stdout) == was.stdout
    assert new.stdout.startswith(f"usage: {name}.py")
    for opt in ADDED.get(name, ()):
        assert f"[{opt}]" in new.stdout and f"\n  {opt}" in new.stdout


# ---- (b) no live GPU: exit 2 and one line -------------------------------------------------------

@pytest.mark.parametrize("name", SCRIPTS)
@pytest.mark.parametrize("extra", [[], ["--quick"], ["--record"], ["--quick", "--record"]])
def test_without_a_live_gpu_exits_2(name, extra, clean, monkeypatch, capsys):
    if runtime.device_info() is not None:          # a GPU machine: make it not live
        monkeypatch.setenv("ASYNCTC_MODE", "replay")
    out = clean / "out"
    sys.argv = [f"{name}.py", "--out", str(out), *extra]
    assert _load(name).main() == 2
    why = runtime.why_not_live("sm_90a")
    assert why and (runtime.device_info() is not None or why == "no GPU on this machine")
    assert capsys.readouterr().out == f"no live sm_90a GPU: {why}\n"
    assert out.is_dir() and not any(out.iterdir())
    assert not (clean / "data").exists()


# ---- a stand-in GPU -----------------------------------------------------------------------------

INFO = runtime.DeviceInfo(name="NVIDIA H200", cc=(9, 0), sm_count=132, max_sm_clock_khz=1980000,
                          mem_clock_khz=3201000, l2_bytes=60 << 20, smem_optin_bytes=232448,
                          driver_version=13000)
PROV = {k: f"stub {k}" for k in records.REQUIRED_PROVENANCE}


@pytest.fixture
def gpu(clean, monkeypatch):
    """runs_live, device_info, nvrtc_version, precompile and records.measure stood in; returns a
    list of the calls to precompile."""
    monkeypatch.setattr(runtime, "runs_live", lambda arch="sm_90a": arch == "sm_90a")
    monkeypatch.setattr(runtime, "device_info", lambda: INFO)
    monkeypatch.setattr(runtime, "nvrtc_version", lambda: (13, 0))
    compiled = []
    monkeypatch.setattr(runtime, "precompile", lambda jobs, *a, **k: compiled.append(list(jobs)))
    monkeypatch.setattr(records, "measure",
                        lambda suite, fn: records.Record(suite, dict(PROV), fn(), live=True))
    return compiled


# ---- (c) record_suite ---------------------------------------------------------------------------

def _common():
    sys.path.insert(0, str(TOOLS))
    import gpu_common
    return gpu_common


def _lines(text: str) -> list[str]:
    return re.sub(r"\[\s*\d+\.\ds\] ", "[t] ", text).splitlines()


def test_start_prints_the_header(gpu, capsys):
    gc = _common()
    tmp = Path(records.data_dir()).parent
    out_dir, say = gc.start(tmp / "o1")
    say("hello")
    assert _lines(capsys.readouterr().out) == [
        "NVIDIA H200, 132 SMs, max SM clock 1980 MHz, smem opt-in 232448 B, NVRTC 13.0",
        "[t] hello"]
    assert out_dir == tmp / "o1" and out_dir.is_dir()
    out_dir, say = gc.start(str(tmp / "o2" / "deeper"), long_header=False)
    assert capsys.readouterr().out == "NVIDIA H200, 132 SMs, NVRTC 13.0\n"
    assert out_dir == tmp / "o2" / "deeper" and out_dir.is_dir()


@pytest.mark.parametrize("save", [False, True])
def test_record_suite_writes_saves_and_summarizes(gpu, save, capsys):
    gc = _common()
    tmp = Path(records.data_dir()).parent
    out_dir = tmp / "out"
    out_dir.mkdir()
    said = []
    rc = gc.record_suite("pipeline", lambda: {"tflops": [512.5, 640.25]},
                         lambda rec: f"summary of {rec.suite}: {rec.results['tflops']}",
                         out_dir, said.append, save=save,
                         on_failure=lambda: pytest.fail("on_failure called on success"))
    assert rc == 0
    doc = json.loads((out_dir / "results.json").read_text())
    assert doc == {"suite": "pipeline", "schema": records.SCHEMA, "provenance": PROV,
                   "results": {"tflops": [512.5, 640.25]}}
    saved = tmp / "data" / "h200" / "pipeline.json"
    lines = capsys.readouterr().out.splitlines()
    if save:
        assert json.loads(saved.read_text()) == doc
        assert (out_dir / "pipeline.json").read_bytes() == saved.read_bytes()
        assert lines == [f"wrote {saved} and {out_dir / 'pipeline.json'}", "",
                         "summary of pipeline: [512.5, 640.25]"]
    else:
        assert not saved.exists() and not (out_dir / "pipeline.json").exists()
        assert lines == ["", "summary of pipeline: [512.5, 640.25]"]
    assert said == [f"wrote {out_dir / 'results.json'}", "done"]
    said.clear()
    assert gc.record_suite("fp8", lambda: {"x": 1}, lambda rec: "s", out_dir, said.append,
                           save=False, wrote=lambda: "wrote it all") == 0
    assert said == ["wrote it all", "done"]


def test_record_suite_failure_records_nothing(gpu, capsys):
    gc = _common()
    tmp = Path(records.data_dir()).parent
    out_dir = tmp / "out"
    out_dir.mkdir()
    order = []

    def measure():
        raise RuntimeError("element (3, 5) outside its bound")

    rc = gc.record_suite("matmul", measure, lambda rec: pytest.fail("summarized a failure"),
                         out_dir, lambda s: order.append(("say", s)), save=True,
                         on_failure=lambda: order.append(("on_failure",)),
                         wrote=lambda: pytest.fail("wrote after a failure"))
    assert rc == 1
    assert order == [("on_failure",), ("say", "FAILED (first failure above); nothing recorded")]
    cap = capsys.readouterr()
    assert cap.out == ""
    assert "Traceback" in cap.err and "RuntimeError: element (3, 5) outside its bound" in cap.err
    assert not any(out_dir.iterdir()) and not (tmp / "data").exists()
    assert gc.record_suite("matmul", measure, str, out_dir, order.append, save=False) == 1


# ---- each script against its version at BEFORE, on the stand-in GPU ----------------------------

@dataclasses.dataclass(frozen=True)
class Cfg:
    name: str
    rung: int = 1

    def label(self):
        return self.name


CFGS = [Cfg("128x128x64 s4", 1), Cfg("128x256x64 s3", 3), Cfg("128x256x64 s4 ws", 5)]


class Boom(RuntimeError):
    pass


def _fakes(name, monkeypatch, mod, fail):
    """The family functions the script calls, standing in for kernels: each reports progress,
    returns what it was asked (so that a changed argument shows in results.json), and raises Boom
    when ``fail``."""
    def measured(**kw):
        kw.pop("progress")("measuring")
        if fail:
            raise Boom("C[17, 3] = nan, bound 0.0123")
        return {k: (list(v) if isinstance(v, tuple) else str(v) if isinstance(v, Path) else v)
                for k, v in kw.items()}

    def summary(rec):
        return f"TABLE {rec.suite} {json.dumps(rec.results, sort_keys=True)}"

    def res(c):
        return types.SimpleNamespace(registers=168 if c.rung < 5 else 232,
                                     spill_stores=4 if c.rung == 3 else 0,
                                     spill_loads=4 if c.rung == 3 else 0)

    def check_rows(*a, **k):
        if k.get("progress"):
            k["progress"]("checking")
        if fail:
            raise Boom("check failed")
        return [{"worst_ratio": 0.125}, {"worst_ratio": 0.5}]

    if name == "gpu_ch05":
        def measure_pipeline(progress, sizes, trace_dir):
            trace_dir.mkdir(parents=True, exist_ok=True)
            for i in range(2):
                (trace_dir / f"t{i}.json").write_text("{}")
            return measured(progress=progress, sizes=sizes, trace_dir=trace_dir.name)
        monkeypatch.setattr(P, "measure_pipeline", measure_pipeline)
        monkeypatch.setattr(P, "sweep_configs", lambda: CFGS)
        monkeypatch.setattr(P, "correctness_configs", lambda: CFGS[:2])
        monkeypatch.setattr(P, "compile_job", lambda c: ("job", c.name))
        monkeypatch.setattr(P, "compile_pipeline",
                            lambda c: types.SimpleNamespace(resources=res(c)))
        monkeypatch.setattr(P, "check_matrix", check_rows)
        monkeypatch.setattr(P, "variants_table", lambda r: f"VARIANTS {sorted(r)}")
        monkeypatch.setattr(P, "summarize_pipeline", summary)
    elif name == "gpu_ch06":
        monkeypatch.setattr(W, "measure_ladder", lambda **kw: measured(**kw))
        monkeypatch.setattr(W, "summarize_ladder", summary)
        monkeypatch.setattr(W, "parse_rungs", lambda s: {1, 3} if s else {1, 3, 5})
        monkeypatch.setattr(W, "correctness_configs", lambda: CFGS)
        monkeypatch.setattr(W, "rung_of", lambda c: c.rung)
        monkeypatch.setattr(W, "compile_job", lambda c: ("job", c.name))
        monkeypatch.setattr(W, "check_all", check_rows)
        monkeypatch.setattr(W, "run_broken", lambda n: "mbarrier wait timed out (as it must)")
    elif name == "gpu_ch07":
        monkeypatch.setattr(fp8, "measure_fp8", lambda **kw: measured(**kw))
        monkeypatch.setattr(fp8, "summarize_fp8", summary)
    elif name == "gpu_matmul":
        monkeypatch.setattr(G, "measure_matmul", lambda **kw: measured(**kw))
        monkeypatch.setattr(G, "summarize_matmul", summary)
        # the script at BEFORE called them on chapter 06's module, where the GEMM lived then
        monkeypatch.setattr(W, "measure_matmul", lambda **kw: measured(**kw), raising=False)
        monkeypatch.setattr(W, "summarize_matmul", summary, raising=False)
    elif name == "gpu_swizzle":
        monkeypatch.setattr(S, "measure_swizzle", lambda **kw: measured(**kw))
        monkeypatch.setattr(S, "summarize_swizzle", summary)
        monkeypatch.setattr(S, "variants", lambda: CFGS)
        monkeypatch.setattr(W, "compile_job", lambda c: ("job", c.name))
        monkeypatch.setattr(mod, "find_ncu", lambda: None)


SCENARIOS = {
    "full": [], "record": ["--record"], "quick": ["--quick"],
    "quick-record": ["--quick", "--record"],
    "sizes": ["--sizes", "1024,2048", "--record"], "fail": ["--record"], "quick-fail": ["--quick"],
}
EXTRA = {"gpu_ch06": [["--rungs", "1-3"]], "gpu_matmul": [["--reps", "3"]],
         "gpu_swizzle": [["--no-ncu"], ["--no-ncu", "--quick", "--record"]]}
CASES = [(n, s, argv) for n in SCRIPTS for s, argv in SCENARIOS.items()
         if not (n == "gpu_matmul" and s == "sizes")] + \
        [(n, "extra", argv) for n, extras in EXTRA.items() for argv in extras]


def _run(name, source, argv, fail, tmp, monkeypatch, capsys, compiled):
    out, data = tmp / "out", tmp / "data"
    for d in (out, data):
        shutil.rmtree(d, ignore_errors=True)
    compiled.clear()
    sys.argv = [f"{name}.py", "--out", str(out), *argv]
    with monkeypatch.context() as m:
        mod = _load(name, source)
        _fakes(name, m, mod, fail)
        rc = mod.main()
    cap = capsys.readouterr()
    files = {str(p.relative_to(tmp)): p.read_text() for d in (out, data) if d.exists()
             for p in sorted(d.rglob("*")) if p.is_file()}
    return rc, _lines(cap.out), cap.err, files, [list(j) for j in compiled]


@pytest.mark.parametrize("name,scenario,argv", CASES, ids=[f"{n}-{s}-{' '.join(a)}"
                                                          for n, s, a in CASES])
def test_main_prints_and_writes_what_it_did_before(name, scenario, argv, gpu, monkeypatch,
                                                  capsys):
    old = _old_source(name)
    tmp = Path(records.data_dir()).parent
    fail = scenario.endswith("fail")
    new = _run(name, None, argv, fail, tmp, monkeypatch, capsys, gpu)
    was = _run(name, old, argv, fail, tmp, monkeypatch, capsys, gpu)
    rc, lines, err, files, compiled = new
    was_lines = was[1]
    if name == "gpu_swizzle":
        # the one line changed on purpose since BEFORE: the experiment now has more than four
        # variants (the row-box ones), and the script says how many it compiled
        was_lines = [f"[t] compiled the {len(CFGS)} variants" if ln == "[t] compiled the four variants"
                     else ln for ln in was_lines]
    assert (rc, lines, files, compiled) == (was[0], was_lines, was[3], was[4])
    assert lines[0].startswith("NVIDIA H200, 132 SMs")
    if fail:
        assert rc == 1 and lines[-1].startswith("[t] FAILED (first failure above)")
        assert "Boom" in err and "Boom" in was[2] and "Traceback" in err
        assert not any(k.endswith("results.json") or k.startswith("data") for k in files)
    else:
        assert rc == 0 and err == was[2] == ""
        quick_checks = "--quick" in argv and name in ("gpu_ch05", "gpu_ch06")
        assert lines[-1] == "[t] done" or quick_checks and lines[-1].endswith(
            "2 checks passed, worst |C-ref|/bound 0.500")
        saved = [k for k in files if k.startswith("data/")]
        records_expected = "--record" in argv and ("--quick" not in argv)
        assert bool(saved) == records_expected, saved


@pytest.mark.parametrize("argv,saved", [(["--swizzle"], False),
                                       (["--swizzle", "--record"], True),
                                       (["--swizzle", "--record", "--sizes", "4096"], True)])
def test_ch07_swizzle_runs_the_fp8_swizzle_suite_only(argv, saved, gpu, monkeypatch, capsys):
    """`tools/gpu_ch07.py --swizzle [--record]`: the "fp8_swizzle" suite alone (mixed FP8
    and every swizzle checked, e4m3 timed under each swizzle beside fp16), never the fp8 suite;
    with --record it writes data/<gpu>/fp8_swizzle.json."""
    from asynctc import fp8
    tmp = Path(records.data_dir()).parent
    out = tmp / "out"
    ran = []
    monkeypatch.setattr(fp8, "measure_fp8", lambda **kw: ran.append("fp8") or {})
    monkeypatch.setattr(fp8, "measure_fp8_swizzle",
                        lambda progress=None, sizes=None: ran.append(("fp8_swizzle", sizes))
                        or {"rows": []})
    monkeypatch.setattr(fp8, "summarize_fp8_swizzle", lambda rec: f"SUMMARY {rec.suite}")
    sys.argv = ["gpu_ch07.py", "--out", str(out), *argv]
    rc = _load("gpu_ch07").main()
    lines = _lines(capsys.readouterr().out)
    sizes = (4096,) if "--sizes" in argv else tuple(fp8.SIZES)
    assert rc == 0 and ran == [("fp8_swizzle", sizes)]
    assert "SUMMARY fp8_swizzle" in lines and lines[-1] == "[t] done"
    assert (out / "results.json").exists()
    files = sorted(p.name for p in Path(records.data_dir()).rglob("*.json"))
    assert files == (["fp8_swizzle.json"] if saved else [])


@pytest.mark.parametrize("argv,saved", [(["--fit"], False), (["--fit", "--record"], True)])
def test_ch07_fit_runs_the_fp8_fit_suite_only(argv, saved, gpu, monkeypatch, capsys):
    """`tools/gpu_ch07.py --fit [--record]`: the "fp8_fit" suite alone (identification runs and
    promotion cost), never the fp8 suite; with --record it writes data/<gpu>/fp8_fit.json."""
    from asynctc import fp8
    tmp = Path(records.data_dir()).parent
    out = tmp / "out"
    ran = []
    monkeypatch.setattr(fp8, "measure_fp8", lambda **kw: ran.append("fp8") or {})
    monkeypatch.setattr(fp8, "measure_fp8_fit",
                        lambda progress=None: ran.append("fp8_fit") or {"identification": {}})
    monkeypatch.setattr(fp8, "summarize_fp8_fit", lambda rec: f"SUMMARY {rec.suite}")
    sys.argv = ["gpu_ch07.py", "--out", str(out), *argv]
    rc = _load("gpu_ch07").main()
    lines = _lines(capsys.readouterr().out)
    assert rc == 0 and ran == ["fp8_fit"]
    assert "SUMMARY fp8_fit" in lines and lines[-1] == "[t] done"
    assert (out / "results.json").exists()
    files = sorted(p.name for p in Path(records.data_dir()).rglob("*.json"))
    assert files == (["fp8_fit.json"] if saved else [])
