import os

import numpy as np
import pytest
from hypothesis import settings

from _isolation import clean_environ


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True)
def _isolated_process_settings(tmp_path_factory):
    """Every test runs as if pytest were started from a clean shell: with _isolation.clean_environ() (no
    $IBVERIFY_* setting, no $HYPOTHESIS_PROFILE, the registry of this checkout), in an empty working directory
    of its own, under umask 022; afterwards the environment (also what the code under test set in it, e.g.
    `verify --resume` sets $IBVERIFY_CACHE), the working directory, the umask and the loaded hypothesis profile
    are those from before. A test that needs one of these settings sets it itself (monkeypatch.setenv, ...).
    Claim items (claims/*.toml, ibverify.pytest_plugin) are not test functions: they keep the caller's
    settings, so `IBVERIFY_REPORT=reports pytest` still writes reports/results.json at the end."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_umask, profile = os.umask(0o022), settings.get_current_profile_name()
    _replace_environ(clean_environ(saved_env))
    os.chdir(tmp_path_factory.mktemp("cwd"))
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.umask(saved_umask)
        _replace_environ(saved_env)
        if settings.get_current_profile_name() != profile:
            settings.load_profile(profile)


def _replace_environ(env: dict[str, str]) -> None:
    for name in [k for k in os.environ if k not in env]:
        del os.environ[name]
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def _hypothesis_draws_independent_of_imports():
    """Hypothesis tests draw the same examples in `pytest` and `pytest -n auto`: its pool of "local
    constants" (literals of every imported local module) is pinned to empty, as for claims
    (ibverify.runner.claim.hypothesis_without_local_constants); otherwise an xdist worker, which imported
    other test modules, drew other examples."""
    from ibverify.runner.claim import hypothesis_without_local_constants

    with hypothesis_without_local_constants():
        yield


# test modules with items of over 5 s (durations of the README pytest, 2026-12-02): marked slow and queued right after
# the claims, so that no worker ends the run on one of them while the other idles
SLOW_MODULES = ("test_tutorial.py", "test_cluster.py", "test_xdist_report.py", "test_browser.py",
                "test_lazy_kernels.py", "test_kernel_cache.py", "test_resume.py", "test_engine_agreement.py",
                "test_userfile.py", "test_shipped_datasets_sweep.py")


def pytest_collection_modifyitems(config, items):
    """Longest first: the claim items, by their runtime in the committed fast baseline (ci/baseline-fast.json; a claim
    not in it counts as 10 s), then the tests of SLOW_MODULES (marked `slow`), then every other test, so that
    pytest-xdist's workers do not end on one long item while the other idles (the claims come last in collection
    order). Order only: every item runs, and the tests keep their relative order within each group."""
    import json
    from pathlib import Path

    base = Path(__file__).resolve().parents[1] / "ci" / "baseline-fast.json"
    try:
        cost = {c["id"]: float(c.get("runtime_s") or 0.0) for c in json.loads(base.read_text())["claims"]}
    except (OSError, ValueError, KeyError, TypeError):
        cost = {}
    for item in items:
        if getattr(item, "claim", None) is None and item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)

    def key(item):
        claim = getattr(item, "claim", None)
        if claim is not None:
            return (0, -cost.get(claim.id, 10.0))
        return (1, 0.0) if item.get_closest_marker("slow") else (2, 0.0)

    items.sort(key=key)
