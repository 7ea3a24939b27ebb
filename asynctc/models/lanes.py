"""One numbering of warpgroups for every chapter, as the learner sees it.

Traces and ring models key their lanes ``"tma"``, ``"producer"``, ``"wg0"``, ``"wg1"`` (with
``"cta0/"`` or ``"cta0."`` before them where several CTAs are drawn): ``wg<c>`` is consumer c.
Chapter 05's kernel runs two consumer warpgroups, hardware warpgroups 0 and 1 (thread 0 of
warpgroup 0 also issues TMA); chapter 06's runs the producer in hardware warpgroup 0 and consumers 0
and 1 in warpgroups 1 and 2 (``cw = wg − 1`` in kernels/warp_specialization.cu). Recorded keys stay
as they are; these functions rename them when they are shown."""
from __future__ import annotations

#: Lane key → the name the learner reads (consumers are numbered by :func:`lane_name`).
NAMES = {"tma": "TMA", "producer": "producer"}


def lane_name(lane: str, producer_warpgroup: bool = False) -> str:
    """The learner's name of a trace or ring-model lane: ``"wg1"`` → ``"consumer 1"``,
    ``"tma"`` → ``"TMA"``, ``"cta0/wg0"`` → ``"cta0/consumer 0"``; other lanes are returned as
    they are. ``producer_warpgroup``: the lane is a chapter 06 kernel trace's, keyed by hardware
    warpgroup (``"cta0/wg1"`` is consumer 0) and its ``"tma"`` lane is the producer's."""
    head, sep, key = lane.rpartition("/") if "/" in lane else lane.rpartition(".")
    if key.startswith("wg") and key[2:].isdigit():
        name = f"consumer {hardware_consumer(int(key[2:]), producer_warpgroup)}"
    elif key == "tma" and producer_warpgroup:
        name = "producer"
    else:
        name = NAMES.get(key, key)
    return head + sep + name


def hardware_consumer(warpgroup: int, producer_warpgroup: bool) -> int:
    """The consumer number of a kernel's hardware warpgroup index: chapter 06's kernels
    (``producer_warpgroup``) keep the producer in warpgroup 0, so consumer c is warpgroup c + 1;
    chapter 05's kernel has no producer warpgroup, so consumer c is warpgroup c."""
    return warpgroup - 1 if producer_warpgroup else warpgroup
