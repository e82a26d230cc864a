"""Claim check functions: plain functions `check(ctx) -> Outcome`, one module per family."""
