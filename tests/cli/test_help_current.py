"""Issue 53 item 5: the `--help` of every command is current. The parser is walked: each help text that lists an
option's choices lists exactly the parser's real choices, a default it states is the parser's, every optimizer list
is the optimizer table's, and the --optimizer help names other libraries' optimizers as they run now (every model,
torch's Muon with its partner syntax)."""

from __future__ import annotations

import argparse
import re

import pytest

from ibverify.cli import build_parser
from ibverify.optim.table import names


def _commands() -> dict[str, argparse.ArgumentParser]:
    p = build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return {"ibverify": p, **sub.choices}


def _actions():
    for cmd, parser in _commands().items():
        for a in parser._actions:
            if a.help and a.help is not argparse.SUPPRESS:
                yield cmd, a


def _mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def test_every_command_is_walked():
    assert set(_commands()) >= {"ibverify", "claims", "verify", "train", "bias", "margin", "predict", "report",
                                "compare"}
    with_choices = [(cmd, a.dest) for cmd, a in _actions() if a.choices]
    assert ("bias", "tier") in with_choices and ("train", "model") in with_choices and len(with_choices) >= 10


def test_a_help_that_names_several_choices_names_them_all():
    checked = 0
    for cmd, a in _actions():
        if not a.choices:
            continue
        said = [c for c in a.choices if _mentions(a.help, str(c))]
        if len(said) >= 2:
            checked += 1
            assert set(said) == {str(c) for c in a.choices}, (cmd, a.dest, a.help, list(a.choices))
        for word in re.findall(r"\(default:? ([\w.-]+)", a.help):
            if word in {str(c) for c in a.choices} and a.default is not None:   # None: resolved later (the table)
                assert word == str(a.default), (cmd, a.dest, a.help, a.default)
    assert checked >= 4   # bias --tier, --order, train --engine, …


def test_each_default_a_help_states_is_the_parsers():
    checked = 0
    for cmd, a in _actions():
        if isinstance(a.default, bool) or not isinstance(a.default, (int, float, str)):
            continue
        for word in re.findall(r"\(default:? ([\w.+-]+)[);: ,]", a.help):
            try:
                same = float(word) == float(a.default)
            except ValueError:
                same = word == str(a.default)
            if word[0].isdigit() or word in map(str, a.choices or ()):
                checked += 1
                assert same, (cmd, a.dest, a.help, a.default)
    assert checked >= 4


def test_every_optimizer_list_is_the_optimizer_tables():
    lists = []
    for cmd, a in _actions():
        for found in re.findall(r"one of: ([\w, -]+?);", a.help):
            lists.append((cmd, a.dest))
            assert found.split(", ") == list(names()), (cmd, a.dest)
    assert ("train", "optimizer") in lists and ("bias", "optimizer") in lists
    epilog = " ".join(build_parser().epilog.split())
    listed = re.search(r"optimizers \(train --optimizer; .*?\): (.*?)\.", epilog)[1]
    assert listed.split(", ") == list(names())
    train = _commands()["train"].description
    assert all(re.search(rf"^  {re.escape(n)} [(=]", train, re.M) or n == "ngd" for n in names())


@pytest.mark.parametrize("cmd", ["train", "bias"])
def test_the_optimizer_help_shows_the_muon_partner_syntax_and_no_linear_only(cmd):
    a = next(x for c, x in _actions() if c == cmd and x.dest == "optimizer")
    text = " ".join(a.help.split())
    assert "torch:Muon[:key=value,...]+PARTNER[:key=value,...]" in text
    assert "torch:NAME[:key=value,...]" in text and "optax:NAME[:key=value,...]" in text
    assert "on the linear model and the block models" in text
    assert "(linear model)" not in text and "linear model only" not in text
    for c, x in _actions():   # no help anywhere says a library's optimizer runs the linear model only
        assert "linear model only" not in x.help or "torch" not in x.help, (c, x.dest)


def test_the_examples_the_help_gives_are_accepted():
    pytest.importorskip("torch")
    from ibverify.optim.adapters import check_name

    a = next(x for c, x in _actions() if c == "bias" and x.dest == "optimizer")
    examples = re.findall(r"e\.g\. ((?:torch|optax):[^\s)]+)", a.help)
    assert "torch:Muon:weight_decay=0+Adam:eps=0" in examples and "torch:Adam:eps=0" in examples
    for e in examples:
        if e.startswith("optax:"):
            pytest.importorskip("optax")
        check_name(e)   # raises on a stale example
