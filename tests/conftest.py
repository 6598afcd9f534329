"""Suite-wide: every realize that finds its program by form (tolk.uop.form) also checks the
find against the full program key, so every test is also a test of the form keys."""

import sys

import pytest

import tolk.callify

tolk.callify.CHECK_FORMS = True


@pytest.fixture
def low_recursion_limit():
    """A recursion limit of 1000 for the test: a walk that recurses per node of a deep graph
    raises RecursionError instead of passing on a generous limit."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(limit)
