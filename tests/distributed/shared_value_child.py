"""The child of test_shared_runs.py's two-process test, in a module of its own: a spawned process imports the module
of its target, and this one imports only numpy and ibverify.cache (the test module pulls in the Dask runner)."""

import os

import numpy as np

from ibverify import cache


def count_and_value(folder, counter, key, out):
    os.environ[cache.RUNS_ENV] = folder

    def compute():
        with open(counter, "a") as f:
            f.write("x")
        return np.arange(3.0) * key

    out.put(cache.shared_value("t", key, compute).tolist())
