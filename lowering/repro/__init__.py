"""Reproducers of CuTeDSL compile failures: `lowering-repro` (see `lowering/repro/cli.py`)."""
