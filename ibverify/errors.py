"""The user-facing error of ibverify (re-exported as `ibverify.IbverifyError`)."""


class IbverifyError(Exception):
    """A user-facing error: the CLI prints its message on one line and exits with status 2."""
