"""Random-program fuzzing of tolk against a numpy interpreter (see programs.py)."""
