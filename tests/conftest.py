import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True)
def _hypothesis_draws_independent_of_imports():
    """Hypothesis tests draw the same examples in `pytest` and `pytest -n auto`: its pool of "local
    constants" (literals of every imported local module) is pinned to empty, as for claims
    (ibverify.runner.claim.hypothesis_without_local_constants); otherwise an xdist worker, which imported
    other test modules, drew other examples."""
    from ibverify.runner.claim import hypothesis_without_local_constants

    with hypothesis_without_local_constants():
        yield
