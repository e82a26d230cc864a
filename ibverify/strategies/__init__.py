"""Hypothesis strategies that build separable data by construction: `linear` (label-folded vectors Z,
with discriminating filters that use the oracles and theory) and `network` (models, points, teacher data)."""
