"""Two-tier hints (asynctc.core.exercises.tiered) on the exercises whose first hint used to hand over
the rule: a known wrong answer is told its symptom and a question at the first miss, the rule (with
its arithmetic) at the same miss again. Readers asked for the capstone's tiers everywhere."""
import pytest

from asynctc.core import exercises
from asynctc.tma import stage_fill as sf


def _twice(capsys, name, answer, **kw):
    out = []
    for _ in range(2):
        assert not exercises.check(name, answer, **kw)
        out.append(capsys.readouterr().out)
    return out


@pytest.mark.tiers
@pytest.mark.parametrize("name, answer, kw, symptom, question, rule", [
    ("ch02.ring_smem", 19, dict(bm=128, bn=64, bk=32, ctas=1), "19 stages × 12288 B = 233472 B",
     "What else does each CTA take", "1024 B the driver reserves per CTA"),
    ("ch02.ring_smem", 20, dict(bm=128, bn=64, bk=32, ctas=1), "20 stages of 12288 B do not fit",
     "Count the bytes of 1 CTA with the reserve", "= 246784 B, more than the SM's 233472 B"),
    ("ch03.stage_fill", sf.kernel_lines().replace("(BM + BN) * BK * 2", "BN * BK * 2"), {},
     "would read B's half", "How many bytes do A's BM×BK box and B's BN×BK box", "16384 + 16384 bytes"),
    ("ch03.stage_fill", sf.kernel_lines().replace("kt * BK, m0", "m0, kt * BK"), {},
     "the coordinates are swapped", "the column or the row", "innermost first"),
    ("ch04.kstep", lambda d, s, m: d + (32 if m == "K" else 2048) * s, {}, "the start moved 16× too far",
     "In what unit does the start-address field count", "address >> 4 (16-byte units)"),
    ("ch04.kstep", lambda d, s, m: d | ((32 if m == "K" else 2048) * s >> 4), {},
     "where k-step 0's start-address field has a 1 bit", "does that carry?", "OR loses the carry"),
    ("ch09.tmem_columns", 128, dict(m=128, n=96, accumulators=2), "128 columns hold one 128×96 accumulator",
     "How many does the kernel keep side by side (§1)?", "The kernel keeps 2"),
    ("ch09.tmem_columns", 192, dict(m=128, n=96, accumulators=2), "2 × 96 columns is what the accumulators use",
     "Which sizes does tcgen05.alloc take (§4)?", "power of two ≥ 32 (and at most 512): round up"),
])
def test_a_known_miss_asks_first_and_gives_the_rule_second(capsys, name, answer, kw, symptom, question, rule):
    one, two = _twice(capsys, name, answer, **kw)
    assert symptom in one and question in one and exercises.SECOND in one, one
    assert rule not in one, one
    assert symptom in two and rule in two and question not in two and exercises.SECOND not in two, two


@pytest.mark.tiers
def test_a_tier_is_kept_per_symptom(capsys):
    """A second, different miss is told its own question first, not the first miss's rule."""
    kw = dict(m=128, n=96, accumulators=2)
    first = _twice(capsys, "ch09.tmem_columns", 128, **kw)[0]
    other, _ = _twice(capsys, "ch09.tmem_columns", 192, **kw)
    assert exercises.SECOND in first and exercises.SECOND in other and "round up" not in other


def test_told_with_rule_gives_the_second_tier_at_once():
    hint = "x " + exercises.tiered("sym.", " Q?", " R.") + " y"
    assert exercises.told(hint, rule=True) == "x sym. R. y"
    assert exercises.told("plain") == "plain" and exercises.told(None) is None
