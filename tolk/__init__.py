"""tolk: a tensor compiler layer whose centre is the linear schedule.

    from tolk import Tensor, dtypes
    y = (Tensor.rand(4, 8) @ Tensor.rand(8, 2)).relu()
    print(y.numpy())

Importing `tolk` loads the Tensor front end lazily; `tolk.uop` alone pulls in nothing else.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["Tensor", "dtypes", "Context", "MultiTensor", "Variable", "jit", "__version__"]


def __getattr__(name: str):
    if name == "Tensor":
        from tolk.tensor import Tensor

        return Tensor
    if name == "dtypes":
        from tolk.dtype import dtypes

        return dtypes
    if name == "Context":
        from tolk.helpers import Context

        return Context
    if name == "Variable":
        from tolk.variable import Variable

        return Variable
    if name == "jit":
        from tolk.engine.jit import jit

        return jit
    if name == "MultiTensor":
        from tolk.multi import MultiTensor

        return MultiTensor
    raise AttributeError(f"module 'tolk' has no attribute {name!r}")
