"""Runtime variables: ``Variable(name, min, max).bind(value)`` as scalars in tensor math.

A bound variable enters the tensor graph as ``BIND(DEFINE_VAR, CONST value)``. Realize
passes the BIND as a call argument and leaves only the DEFINE_VAR in the body, so two
realizes that differ only in a variable's value share one cached schedule; kernels read the
value at run time from ``var_vals``.
"""

from __future__ import annotations

import numpy as np

from tolk.dtype import dtypes
from tolk.uop.ops import Ops, UOp


_INT32 = (-(1 << 31), (1 << 31) - 1)


class Variable:
    """A named integer with inclusive bounds ``min_ <= value <= max_``."""

    def __init__(self, name: str, min_: int, max_: int):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"a variable name must be an identifier, got {name!r}")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (min_, max_)):
            raise TypeError(f"variable {name!r} bounds must be ints, got {min_!r} and {max_!r}")
        if min_ > max_:
            raise ValueError(f"variable {name!r} has min {min_} > max {max_}")
        if not _INT32[0] <= min_ <= max_ <= _INT32[1]:  # kernels read it as an int32
            raise ValueError(f"variable {name!r} range [{min_}, {max_}] does not fit int32")
        self.name, self.min, self.max = name, min_, max_
        self.uop = UOp(Ops.DEFINE_VAR, dtypes.int32, (), (name, min_, max_))

    def bind(self, value: int) -> BoundVariable:
        """This variable with a value; `ValueError` outside ``[min, max]``."""
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"variable {self.name!r} takes an int, got {value!r}")
        if not self.min <= value <= self.max:
            raise ValueError(f"variable {self.name!r} = {value} is outside "
                             f"[{self.min}, {self.max}]")
        return BoundVariable(self, value)

    def __repr__(self) -> str:
        return f"Variable({self.name!r}, {self.min}, {self.max})"


class BoundVariable:
    """A variable with its current value (plus an int offset, ``pos + 1``); usable as a
    scalar operand of Tensor math and as a slice bound. In tensor math it is an int scalar,
    weakly typed as a Python int: it takes the tensor's dtype (an int tensor's must hold the
    variable's whole range: ValueError otherwise), as PyTorch's symbolic ints and tinygrad's
    variables do, where a 0-d int32 tensor would make float32 math float64 (numpy)."""

    def __init__(self, var: Variable, value: int, add: int = 0):
        if not _INT32[0] <= var.min + add <= var.max + add <= _INT32[1]:
            raise ValueError(f"variable {var.name!r} plus {add} ranges over [{var.min + add}, "
                             f"{var.max + add}], past int32 (kernels compute it in int32)")
        self.var, self.add = var, add
        self.value = value + add
        self.uop = UOp(Ops.BIND, dtypes.int32, (var.uop, UOp.const(dtypes.int32, value)))

    @property
    def name(self) -> str:
        return self.var.name

    def __repr__(self) -> str:
        return (f"{self.var.name}{self.add:+d}={self.value}" if self.add
                else f"{self.var.name}={self.value}")

    def _t(self):
        from tolk.tensor import Tensor

        t = Tensor(self.uop)
        return t + self.add if self.add else t

    def __add__(self, x):
        if isinstance(x, int) and not isinstance(x, bool):
            return BoundVariable(self.var, self.value - self.add, self.add + x)
        return x.__radd__(self) if _is_tensor(x) else self._t() + x

    def __radd__(self, x):
        if isinstance(x, int) and not isinstance(x, bool):
            return self + x
        return x + self._t()

    def __sub__(self, x):
        if isinstance(x, int) and not isinstance(x, bool):
            return self + (-x)
        return x.__rsub__(self) if _is_tensor(x) else self._t() - x

    def __rsub__(self, x):
        return x - self._t()

    def __mul__(self, x):
        return x.__rmul__(self) if _is_tensor(x) else self._t() * x

    def __rmul__(self, x):
        return x * self._t()

    def __truediv__(self, x):
        return x.__rtruediv__(self) if _is_tensor(x) else self._t() / x

    def __rtruediv__(self, x):
        return x / self._t()

    # the rest of Tensor math: as the variable's value in a 0-d int32 tensor, weakly typed
    def __floordiv__(self, x):
        return x.__rfloordiv__(self) if _is_tensor(x) else self._t() // x

    def __rfloordiv__(self, x):
        return x // self._t()

    def __mod__(self, x):
        return x.__rmod__(self) if _is_tensor(x) else self._t() % x

    def __rmod__(self, x):
        return x % self._t()

    def __pow__(self, x):
        return x.__rpow__(self) if _is_tensor(x) else self._t() ** x

    def __rpow__(self, x):
        return x ** self._t()

    def __neg__(self):
        return -self._t()

    def __lt__(self, x):  # a 0-d bool tensor (``bool()`` of it realizes)
        return x > self if _is_tensor(x) else self._t() < x

    def __le__(self, x):
        return x >= self if _is_tensor(x) else self._t() <= x

    def __gt__(self, x):
        return x < self if _is_tensor(x) else self._t() > x

    def __ge__(self, x):
        return x <= self if _is_tensor(x) else self._t() >= x

    def __eq__(self, x):  # type: ignore[override]
        if not _is_tensor(x) and not isinstance(x, (int, float, np.number, np.bool_,
                                                     BoundVariable)):
            return NotImplemented  # (None, a string: not equal, as Python answers it)
        return x == self if _is_tensor(x) else self._t() == x

    def __ne__(self, x):  # type: ignore[override]
        if not _is_tensor(x) and not isinstance(x, (int, float, np.number, np.bool_,
                                                     BoundVariable)):
            return NotImplemented
        return x != self if _is_tensor(x) else self._t() != x

    __hash__ = object.__hash__  # (an object of its own in sets and dicts, as a Tensor)
    __array_ufunc__ = None  # numpy defers to the operators (``ndarray + v``: TypeError)


def _is_tensor(x) -> bool:
    """Whether `x` is a Tensor or a sharded one: its operators take the variable as a weakly
    typed int scalar (a float32 tensor and a variable make float32)."""
    from tolk.multi import MultiTensor
    from tolk.tensor import Tensor

    return isinstance(x, (Tensor, MultiTensor))
