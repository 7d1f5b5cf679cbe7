import os
import sys

# The tests import the small kernels next to them (tests/cute_kernels.py).
sys.path.insert(0, os.path.dirname(__file__))
