"""tolk's error hierarchy: each error subclasses the builtin a user would catch."""

from __future__ import annotations


class ScheduleError(ValueError):
    """A kernel graph or schedule that breaks the schedule module's contract."""


class ShapeError(ValueError):
    """Shapes that do not fit the operation."""


class DeviceError(ValueError):
    """An unknown device or a device mismatch."""


class JitError(RuntimeError):
    """A captured function called in a way its capture cannot serve."""
