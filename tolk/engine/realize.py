"""Running linear schedules, and the capture hook the schedule module hands schedules to."""

from __future__ import annotations

# Objects with an ``add_linear(linear, var_vals)`` method. While one is registered (and the
# CAPTURING flag is on), `tolk.schedule.create_linear_with_vars` hands every schedule to
# ``capturing[0]`` unplanned and returns an empty LINEAR instead of a schedule to run.
capturing: list = []
