"""Which samples each step uses: index blocks of shape (steps, b), generated chunk by chunk.

cyclic:      step t uses positions t·b, …, t·b+b−1 of the sequence 0,1,…,N−1,0,1,… (b = 1: Inc-Adam)
reshuffle:   the same over a stream of fresh random permutations, one per epoch (drawn k at a time
             with `rng.permuted` on a tiled block: the same stream as k calls of `rng.permutation(n)`)
replacement: b indices drawn i.i.d. uniformly each step
Full batch (b = N, cyclic) is every sample every step. All randomness comes from one seeded
numpy Generator whose state is part of a checkpoint. Cyclic order needs no index array at all:
`take_cyclic` returns the start position for the compiled kernels (8 bytes per step saved).
"""

from __future__ import annotations

import numpy as np


class Sampler:
    def __init__(self, n: int, b: int, order: str, seed: int = 0):
        self.n, self.b, self.order = n, b, order
        self.rng = np.random.default_rng(seed)
        self.pos = 0  # position in the index stream (cyclic / reshuffle)
        self.buffer = np.empty(0, dtype=np.int64)

    def next(self, steps: int) -> np.ndarray:
        """Index block for the next `steps` steps."""
        n, b = self.n, self.b
        if self.order == "replacement":
            return self.rng.integers(0, n, size=(steps, b))
        need = steps * b
        if self.order == "cyclic":
            out = (self.pos + np.arange(need)) % n
            self.pos = (self.pos + need) % n
            return out.reshape(steps, b)
        if self.buffer.size < need:  # one concatenation (appending per epoch would be quadratic)
            extra = -(-(need - self.buffer.size) // n)
            block = self.rng.permuted(np.broadcast_to(np.arange(n), (extra, n)), axis=1)
            self.buffer = np.concatenate([self.buffer, block.ravel()])
        out, self.buffer = self.buffer[:need], self.buffer[need:]
        return out.reshape(steps, b)

    def take_cyclic(self, steps: int) -> int:
        """Cyclic order only: the stream position of the next `steps` steps (then advanced past them)."""
        assert self.order == "cyclic"
        start = self.pos
        self.pos = (self.pos + steps * self.b) % self.n
        return start

    def state(self) -> dict:
        return {"pos": int(self.pos), "buffer": self.buffer.tolist(), "rng": self.rng.bit_generator.state}

    def restore(self, st: dict) -> None:
        self.pos = st["pos"]
        self.buffer = np.asarray(st["buffer"], dtype=np.int64)
        self.rng.bit_generator.state = st["rng"]
