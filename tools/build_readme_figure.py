"""Draw docs/gemm.md's figure of asynctc.matmul by shape from the committed ``matmul_host`` record.

    python tools/build_readme_figure.py        # writes docs/matmul_by_shape.png

Reads the record; measures nothing (the record comes from ``tools/gpu_matmul_host.py --record``).
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from asynctc.core import records  # noqa: E402
from asynctc.gemm import figures  # noqa: E402


def main() -> int:
    rec = records.load("matmul_host")
    ax = figures.plot_matmul_ratios(rec.results["rows"])
    ax.set_title(f"asynctc.matmul by shape ({rec.provenance.get('gpu', '?')}, "
                 f"{str(rec.provenance.get('date', '?'))[:10]}; red: the goal of the class)",
                 fontsize=9)
    out = ROOT / "docs" / "matmul_by_shape.png"
    ax.figure.savefig(out, dpi=110, bbox_inches="tight")
    print("wrote", out.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
