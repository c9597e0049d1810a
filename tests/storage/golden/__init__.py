"""Golden data directories: written once by ``make_golden.py``, opened by every later version."""
