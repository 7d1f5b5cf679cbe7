"""Analyses: reusable facts about CuTeDSL IR that check passes turn into diagnostics.

- `uniformity`: which values are uniform across the CTA, a warpgroup, a warp, or may
  differ per thread, and under which conditions each op runs.
- `collective_ops`: which ops are collectives, at what scope, with the PTX each becomes.
"""
