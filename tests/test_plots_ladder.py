"""plots.ladder's baseline line: its legend says what the baseline is (02 §4 names chapter 01's
kernel as timed in the same run, not chapter 01's own number; reader 144)."""

import matplotlib

matplotlib.use("Agg")

from asynctc.core import plots  # noqa: E402


def _legend(fig):
    return [t.get_text() for lg in fig.legends for t in lg.get_texts()]


def test_the_baseline_legend_defaults_to_label_value_unit_and_can_be_given():
    fig = plots.ladder(["a", "b"], [300.0, 400.0], baseline=332.4, baseline_label="chapter 01")
    assert _legend(fig) == ["chapter 01 332 TFLOP/s"]
    fig = plots.ladder(["a", "b"], [300.0, 400.0], baseline=332.4, baseline_label="chapter 01",
                       baseline_legend="chapter 01's kernel, timed in this run: 332 TFLOP/s")
    assert _legend(fig) == ["chapter 01's kernel, timed in this run: 332 TFLOP/s"]
    assert any("× chapter 01)" in t.get_text() for t in fig.axes[0].texts)   # the bars keep the short label
