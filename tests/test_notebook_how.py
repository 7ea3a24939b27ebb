"""notebook.how: a chapter helper's own source, to read in the notebook."""
import pytest

from asynctc.core import notebook
from asynctc.mma_sync import lesson


def test_how_shows_a_guarded_helper_whole():
    code = notebook.how(lesson.show_why)           # @notebook.guards wraps it: the source is the helper's
    assert code.data.startswith("# asynctc.mma_sync.lesson.show_why\n")
    assert "def show_why(" in code.data and "notebook.require(" in code.data


def test_how_refuses_what_has_no_source():
    with pytest.raises(TypeError, match="helper must be a function or class, got int"):
        notebook.how(3)


def test_ratio_shows_its_operands_and_quotient():
    assert notebook.ratio(330.2, 759.1, "TFLOP/s") == "330.2 / 759.1 TFLOP/s = 0.43"
    assert notebook.ratio(1.5, 3.0, digits=3) == "1.5 / 3 = 0.500"
    import pytest
    with pytest.raises(ValueError, match="den is 0"):
        notebook.ratio(1.0, 0.0)
