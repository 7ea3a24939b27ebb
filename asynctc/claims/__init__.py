"""Chapter 10 — reproduce and bound a claim (:mod:`.bounds`: every same-run pair of chapter 06's top
rung and cuBLAS in the records, the interval, a verdict); deep dive 10b — "% of peak" under both
denominators, with the seed article's 4096³ table as the worked example, and every quantitative
statement of the seed article (the tutorial this course checks, see README) beside the course's
measurement, and the public anchors the course cites beside ours.

Nothing here measures: the chapter reads the records the other chapters wrote (``data/<gpu>/``,
:func:`load_records`), computes the course's number for each statement, and gives a verdict from
that number and the statement's band — :data:`~asynctc.claims.verdicts.HOLDS`, ``FAILS`` ("does not
hold"), ``PARTLY``, ``NOT_MEASURED`` ("not measured here"; what would measure it is named) or
``BLACKWELL`` ("cannot be measured here"). Every "% of peak" statement is judged under both
denominators: the datasheet (989 TFLOP/s dense fp16, 1979 fp8) and SMs × FLOP/clk/SM × the SM clock
measured for that row (its kind — in-kernel, in flight — printed beside it).

* :mod:`.verdicts` — verdict words, :class:`Part`, :class:`Claim`, both denominators, records;
* :mod:`.seed` — :data:`SEED_CLAIMS` and :func:`evaluate`; :mod:`.seed_copies` — the judges of
  its copy statements (TMA against manual copies, the ``tma_copy`` and ``tma_equal`` records);
* :mod:`.gaps` — what would measure each part not measured yet;
* :mod:`.anchors` — :data:`ANCHORS` and :func:`evaluate_anchors`;
* :mod:`.report` — the tables (:func:`percent_text` and :func:`percent_worked`, the "% of peak"
  claims under both denominators; :func:`summary_markdown`, one row per claim in plain words;
  :func:`table_text`, every part), :data:`WRITTEN_FOR` and :func:`check_written` (raises
  :class:`asynctc.core.notebook.ClaimError` when the records flip a verdict the chapters' text
  was written for);
* :mod:`.figures` — :func:`fractions_figure`, :func:`ratios_figure` and both in one,
  :func:`claims_figure` (never measures);
* :mod:`.bounds` — :func:`same_run_pairs`, :func:`bound`, the two verdict rules (:func:`verdict`);
* :mod:`.lesson` — chapter 10's cell helpers (:func:`~.lesson.record_answers`,
  :func:`~.lesson.runs_set_the_bound`); the guard asserts the fixed sentences §2's markdown states (§1's peaks,
  §2's bound and widest pair, and §3's verdicts are visible cells);
* :mod:`.exercises` — ``ch10.bound`` and ``ch10.bound_verdict`` (chapter 10), ``ch10.fraction_both``
  and ``ch10.verdict`` (10b).

Chapter 10 registers no ``record`` suite: it has nothing to measure.
"""

from . import bounds  # noqa: F401  (chapter 10's core task)
from . import exercises as _exercises  # noqa: F401  (registers the ch10 exercises)
from .anchors import ANCHORS, Anchor
from .anchors import evaluate as evaluate_anchors
from .report import (WRITTEN_FOR, WRITTEN_FOR_ANCHORS, anchors_text, check_written, counts,
                     counts_text, mismatches, not_measured, not_measured_text, percent_rows,
                     percent_text, percent_worked, PLAIN, SHORT, our_number, summary_markdown,
                     table_text, verdict_words, written_verdict)
from .seed import SEED_4096, SEED_CLAIMS, evaluate, note
from .verdicts import (ABOVE, ANCHOR_VERDICTS, BELOW, BLACKWELL, DATASHEET, FAILS, HOLDS, MATCHES,
                       MEASURED_CLOCK, NOT_MEASURED, PARTLY, VERDICTS, Claim, MissingRecord, Part,
                       combine, distance, fractions, load_records, near_text)


def claims_figure(claims, anchors=(), title: str = ""):
    """:func:`asynctc.claims.figures.claims_figure` (matplotlib imported on first use)."""
    from .figures import claims_figure as fig
    return fig(claims, anchors, title)


def fractions_figure(claims, anchors=(), title: str = ""):
    """:func:`asynctc.claims.figures.fractions_figure` (matplotlib imported on first use)."""
    from .figures import fractions_figure as fig
    return fig(claims, anchors, title)


def ratios_figure(claims, anchors=(), title: str = ""):
    """:func:`asynctc.claims.figures.ratios_figure` (matplotlib imported on first use)."""
    from .figures import ratios_figure as fig
    return fig(claims, anchors, title)


__all__ = ["ANCHORS", "Anchor", "evaluate_anchors", "WRITTEN_FOR", "WRITTEN_FOR_ANCHORS",
           "anchors_text", "check_written", "counts", "counts_text", "mismatches", "not_measured",
           "not_measured_text", "percent_rows", "percent_text", "percent_worked", "PLAIN", "SHORT",
           "our_number", "summary_markdown", "verdict_words", "table_text", "written_verdict", "SEED_4096",
           "SEED_CLAIMS", "evaluate", "note", "ABOVE", "ANCHOR_VERDICTS", "BELOW", "BLACKWELL",
           "DATASHEET", "FAILS", "HOLDS", "MATCHES", "MEASURED_CLOCK", "NOT_MEASURED", "PARTLY",
           "VERDICTS", "Claim", "MissingRecord", "Part", "combine", "distance", "fractions", "load_records", "near_text",
           "claims_figure", "fractions_figure", "ratios_figure"]
