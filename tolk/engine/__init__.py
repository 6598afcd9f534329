"""Execution: running linear schedules (`realize`) and capture/replay (`jit`)."""
