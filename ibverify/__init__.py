"""ibverify: numerical, repeatable verification of implicit-bias theorems for optimizers.

Data flow: dataset -> run -> evidence -> verdict -> report.
"""

__version__ = "0.1.0"


class IbverifyError(Exception):
    """A user-facing error: the CLI prints its message on one line and exits with status 2."""
