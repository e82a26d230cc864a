"""Progress (tqdm): silent when disabled; a bar with steps that never shows an absurd first ETA on a terminal; plain
lines in a log (one per horizon, one a minute); messages carry the (settable) label; close erases the line."""

import io
import re

from ibverify import progress
from ibverify.progress import Progress


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_disabled_writes_nothing():
    for s in (io.StringIO(), Tty()):   # --quiet: nothing, in a log or on a terminal
        p = Progress("x", enabled=False, stream=s)
        p.steps(5, 10)
        p.steps(10, 10)
        p.message("hello")
        p.close()
        assert s.getvalue() == "" and not p.enabled and p.mode == "off"


def test_the_front_end_follows_the_stream(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    assert Progress("x", stream=Tty()).mode == "terminal"
    assert Progress("x", stream=io.StringIO()).mode == "log"   # a log file, a pipe
    monkeypatch.setenv("CI", "true")
    assert Progress("x", stream=Tty()).mode == "log"           # CI's terminal is a log
    assert Progress("x", stream=Tty()).enabled


def test_bar_counts_steps_and_first_frame_has_no_eta(monkeypatch):
    monkeypatch.delenv("CI", raising=False)   # CI's terminal is a log (test_the_front_end_follows_the_stream)
    # issue 11: the hand-written bar's first frame said "ETA 3222510.4s"
    s = Tty()
    p = Progress("inc-adam", enabled=True, stream=s)
    p.steps(0, 1000)
    first = s.getvalue()
    assert "inc-adam" in first and "0.00/1.00k" in first and "<?" in first
    p.steps(1000, 1000)
    p.close()
    assert "1.00k/1.00k" in s.getvalue() and "100%" in s.getvalue()


def test_resumed_run_starts_at_its_step(monkeypatch):
    monkeypatch.delenv("CI", raising=False)   # CI's terminal is a log (test_the_front_end_follows_the_stream)
    s = Tty()
    p = Progress("adam", enabled=True, stream=s)
    p.steps(400, 1000)
    assert re.search(r"40%.*400/1.00k", s.getvalue())
    p.close()


def test_messages_use_the_current_label(monkeypatch):
    monkeypatch.delenv("CI", raising=False)   # CI's terminal is a log (test_the_front_end_follows_the_stream)
    s = Tty()
    p = Progress(enabled=True, stream=s)
    p.label = "baek.claim"
    p.message("running")
    p.label = "zhang.claim"
    p.message("seed 3\nmore")
    p.close()
    text = s.getvalue()
    assert "baek.claim · running" in text and "zhang.claim · seed 3 more" in text
    assert text.endswith("\r")  # the line is cleared on close


def _log(monkeypatch, clock):
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    s = io.StringIO()
    return s, Progress("bias gd", stream=s)


def test_a_log_gets_one_line_per_horizon_naming_dataset_model_and_horizon(monkeypatch):
    clock = [100.0]
    s, p = _log(monkeypatch, clock)
    p.message("two-layer: dataset 1/3 (teacher-0)")
    for done in range(0, 100_001, 10_000):
        clock[0] += 1.0
        p.steps(done, 100_000)
    p.steps(0, 1_000_000)   # extended ×10: a new horizon
    clock[0] += 5.0
    p.steps(1_000_000, 1_000_000)
    assert s.getvalue().splitlines() == [
        "bias gd · two-layer: dataset 1/3 (teacher-0)",
        "bias gd · two-layer: dataset 1/3 (teacher-0) · horizon 1e5: 100000/100000 steps (100 %), 10 s",
        "bias gd · two-layer: dataset 1/3 (teacher-0) · horizon 1e6: 1000000/1000000 steps (100 %), 5 s"]


def test_a_long_horizon_gets_a_line_a_minute(monkeypatch):
    clock = [0.0]
    s, p = _log(monkeypatch, clock)
    p.steps(0, 3_000_000)
    for k in range(1, 7):   # 25 s a chunk: a minute since the start after chunk 3 (75 s), since then after 6 (150 s)
        clock[0] = 25.0 * k
        p.steps(100_000 * k, 3_000_000)
    lines = s.getvalue().splitlines()
    assert lines == ["bias gd · horizon 3e6: 300000/3000000 steps (10 %), 75 s",
                     "bias gd · horizon 3e6: 600000/3000000 steps (20 %), 150 s"]
    assert progress.LOG_EVERY_S == 60.0


def test_horizons_are_named_as_powers_of_ten():
    assert [progress.horizon_text(t) for t in (100_000, 3_000_000, 12_345, 1)] == ["1e5", "3e6", "12345", "1e0"]


def test_a_notebook_gets_tqdm_auto(monkeypatch):
    import sys
    import types

    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    monkeypatch.delenv("CI", raising=False)
    p = Progress("train gd", stream=sys.stderr)
    assert p.mode == "notebook"
    made = []
    import tqdm.auto

    class Spy(tqdm.auto.tqdm):
        def __init__(self, *a, **k):
            made.append(k["desc"])
            super().__init__(*a, **{**k, "file": io.StringIO()})

    monkeypatch.setattr(tqdm.auto, "tqdm", Spy)
    p.message("digits 1v2")
    p.steps(10, 100)
    p.close()
    assert made == ["train gd · digits 1v2", "train gd · digits 1v2 · horizon 1e2"]


def test_the_stream_is_stderr_as_it_is_when_made(monkeypatch):
    """Not the stderr of import time: a notebook (or pytest's capture) swaps sys.stderr after ibverify is imported."""
    import sys

    monkeypatch.delenv("CI", raising=False)
    s = io.StringIO()
    monkeypatch.setattr(sys, "stderr", s)
    p = Progress("train gd")
    p.steps(10, 10)
    assert p.stream is s and s.getvalue().startswith("train gd · horizon 1e1: 10/10 steps (100 %)")
