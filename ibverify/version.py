"""The package's version (re-exported as `ibverify.__version__`; pyproject.toml states the same)."""

__version__ = "0.1.0"
