"""Progress (tqdm): silent when disabled or off a terminal; a bar with steps that never shows an
absurd first ETA; messages carry the (settable) label; close erases the line."""

import io
import re

from ibverify.progress import Progress


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_disabled_writes_nothing():
    s = io.StringIO()  # not a TTY: default is off
    p = Progress("x", stream=s)
    p.steps(5, 10)
    p.message("hello")
    p.close()
    assert s.getvalue() == "" and not p.enabled


def test_ci_turns_it_off(monkeypatch):
    monkeypatch.setenv("CI", "true")
    assert not Progress("x", stream=Tty()).enabled
    monkeypatch.delenv("CI")
    assert Progress("x", stream=Tty()).enabled


def test_bar_counts_steps_and_first_frame_has_no_eta():
    # issue 11: the hand-written bar's first frame said "ETA 3222510.4s"
    s = io.StringIO()
    p = Progress("inc-adam", enabled=True, stream=s)
    p.steps(0, 1000)
    first = s.getvalue()
    assert "inc-adam" in first and "0.00/1.00k" in first and "<?" in first
    p.steps(1000, 1000)
    p.close()
    assert "1.00k/1.00k" in s.getvalue() and "100%" in s.getvalue()


def test_resumed_run_starts_at_its_step():
    s = io.StringIO()
    p = Progress("adam", enabled=True, stream=s)
    p.steps(400, 1000)
    assert re.search(r"40%.*400/1.00k", s.getvalue())
    p.close()


def test_messages_use_the_current_label():
    s = io.StringIO()
    p = Progress(enabled=True, stream=s)
    p.label = "baek.claim"
    p.message("running")
    p.label = "zhang.claim"
    p.message("seed 3\nmore")
    p.close()
    text = s.getvalue()
    assert "baek.claim running" in text and "zhang.claim seed 3 more" in text
    assert text.endswith("\r")  # the line is cleared on close
