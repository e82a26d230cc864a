"""The one time limit tests put on subprocesses and queues: a guard against a hang, never a timing assertion.

It must hold under any load a test can meet on 2 shared cores (a full-tier `verify` at normal priority beside a
niced `pytest` starved a 2-worker smoke run past 300 s), so it is an hour: only a real hang reaches it."""

HANG_GUARD_S = 3600
