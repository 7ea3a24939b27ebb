"""notebook.how: a chapter helper's own source, to read in the notebook."""
import pytest

from asynctc.core import notebook
from asynctc.mma_sync import lesson


def test_how_shows_a_guarded_helper_whole():
    code = notebook.how_source(notebook.require)   # @notebook.guards marks it: the source is the helper's
    assert code.startswith("# asynctc.core.notebook.require\n")
    assert "def require(" in code and "raise ClaimError(" in code


def test_how_shows_a_table_helper():
    code = notebook.how_source(lesson.why_table)
    assert code.startswith("# asynctc.mma_sync.lesson.why_table\n") and "why_rows(rec, tile)" in code


def test_how_displays_wherever_it_stands(monkeypatch):
    """It displays the code itself, so a call that is not a cell's last expression still shows it."""
    import IPython.display
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    assert notebook.how(lesson.why_table) is None
    assert len(shown) == 1 and shown[0].data == notebook.how_source(lesson.why_table)


def test_how_refuses_what_has_no_source():
    with pytest.raises(TypeError, match="helper must be a function or class, got int"):
        notebook.how(3)


def test_ratio_shows_its_operands_and_quotient():
    assert notebook.ratio(330.2, 759.1, "TFLOP/s") == "330.2 / 759.1 TFLOP/s = 0.43"
    assert notebook.ratio(1.5, 3.0, digits=3) == "1.5 / 3 = 0.500"
    import pytest
    with pytest.raises(ValueError, match="den is 0"):
        notebook.ratio(1.0, 0.0)
