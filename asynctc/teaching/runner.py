"""Execute one course notebook and say what went wrong, if anything.

An execution error (a cell raised, timed out, or the kernel died before the last cell) fails the
chapter. An error raised while the Jupyter kernel shuts down *after every cell has run* does not:
the shutdown is retried and the chapter passes with a note that says so. The error text written
for a failure is never empty (it always names the exception's type, and the traceback follows).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import traceback
from typing import Any, Callable


@dataclasses.dataclass
class Outcome:
    """``status``: "passed" or "FAILED"; ``kind``: None, "execution" (a cell failed or the kernel
    died mid-run) or "shutdown" (the kernel's shutdown raised after the last cell); ``message``:
    one line for the console; ``detail``: the full text for the error file ("" when passed with
    nothing to report)."""

    status: str
    kind: str | None = None
    message: str = ""
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def describe(e: BaseException) -> str:
    """``Type: message`` then the traceback — never empty, even for an exception without text."""
    head = f"{type(e).__name__}: {e}".rstrip(": ").rstrip() or type(e).__name__
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__)).strip()
    return head + ("\n\n" + tb if tb else "")


def _code_cells(nb) -> list:
    return [c for c in nb.cells if c.get("cell_type") == "code" and str(c.get("source", "")).strip()]


def cell_error(nb) -> tuple[int, dict] | None:
    """(index, output) of the first error output in ``nb``, or None."""
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            if out.get("output_type") == "error":
                return i, out
    return None


def all_cells_ran(nb) -> bool:
    """Every non-empty code cell has an execution count and none holds an error output."""
    return all(c.get("execution_count") is not None for c in _code_cells(nb)) and cell_error(nb) is None


def _resolve(x: Any) -> Any:
    if inspect.isawaitable(x):
        loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(x)
        finally:
            loop.close()
    return x


def retry_shutdown(client, attempts: int = 3) -> tuple[bool, str]:
    """Shut the client's kernel down (``client.km``), up to ``attempts`` times: (done, what
    happened). A kernel that is no longer alive counts as shut down."""
    km = getattr(client, "km", None)
    if km is None:
        return True, "no kernel manager left (the kernel is gone)"
    last = ""
    for n in range(1, attempts + 1):
        try:
            if not _resolve(km.is_alive()):
                return True, f"kernel no longer running (checked on attempt {n})"
            _resolve(km.shutdown_kernel(now=True))
            return True, f"shutdown retried and succeeded on attempt {n}"
        except Exception as e:  # noqa: BLE001 - reported, not raised
            last = f"{type(e).__name__}: {e}"
    return False, f"shutdown still failing after {attempts} attempts ({last})"


def run_notebook(nb, make_client: Callable[[Any], Any]) -> Outcome:
    """Execute ``nb`` in place with ``make_client(nb).execute()`` and classify the result."""
    client = make_client(nb)
    try:
        client.execute()
    except Exception as e:  # noqa: BLE001 - classified below
        err = cell_error(nb)
        if err is None and all_cells_ran(nb):
            done, how = retry_shutdown(client)
            msg = (f"every cell ran; the kernel's shutdown then raised {type(e).__name__}"
                   f"{': ' + str(e).splitlines()[0] if str(e).strip() else ''} — {how}")
            return Outcome("passed", "shutdown", msg,
                           "kernel-shutdown error after the last cell (not an execution error)\n"
                           f"{how}\n\n{describe(e)}")
        if err is not None:
            i, out = err
            line = f"cell {i} raised {out.get('ename', '?')}: {out.get('evalue', '')}".rstrip(": ")
        else:
            ran = sum(c.get("execution_count") is not None for c in _code_cells(nb))
            line = (f"{type(e).__name__} after {ran} of {len(_code_cells(nb))} code cells"
                    f"{': ' + str(e).strip().splitlines()[-1] if str(e).strip() else ''}")
        return Outcome("FAILED", "execution", line, f"execution error: {line}\n\n{describe(e)}")
    return Outcome("passed")
