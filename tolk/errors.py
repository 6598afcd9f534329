"""tolk's error hierarchy: each error subclasses the builtin a user would catch."""

from __future__ import annotations


class ScheduleError(ValueError):
    """A kernel graph or schedule that breaks the schedule module's contract."""


class CycleError(ScheduleError):
    """A kernel graph whose ordering constraints form a cycle: no schedule exists."""


class ShapeError(ValueError):
    """Shapes that do not fit the operation."""


class DeviceError(ValueError):
    """An unknown device, a device mismatch, or storage that cannot be bound."""


class JitError(RuntimeError, ValueError):
    """A captured function called in a way its capture cannot serve (a RuntimeError, as it
    always was, and a ValueError, as other bad input to tolk is)."""


class GradientError(ValueError):
    """A gradient that cannot be taken: a target the graph does not read, or an op on the
    way to one that has no gradient rule."""


class GraphFormatError(ValueError):
    """Bytes that are not a valid exported tolk graph."""


class RewriteError(ValueError):
    """A rule set that did not converge, or a rule that built a cycle."""


class KernelCompileError(ValueError):
    """A kernel AST a backend cannot compile."""


class RaggedIndexError(IndexError, ValueError):
    """An index list that is no rectangular array of integers (numpy raises a ValueError for
    a ragged one; an IndexError, as every bad index in tolk)."""
