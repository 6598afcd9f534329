"""tolk: a tensor compiler layer whose centre is the linear schedule.

    from tolk import Tensor, dtypes
    y = (Tensor.rand(4, 8) @ Tensor.rand(8, 2)).relu()
    print(y.numpy())

Importing `tolk` loads the Tensor front end lazily; `tolk.uop` alone pulls in nothing else.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["Tensor", "dtypes", "Context", "MultiTensor", "Variable", "jit", "__version__"]


_LAZY = {  # public name -> the module that defines it (loaded on first use)
    "Tensor": "tolk.tensor", "dtypes": "tolk.dtype", "Context": "tolk.helpers",
    "MultiTensor": "tolk.multi", "Variable": "tolk.variable", "jit": "tolk.engine.jit",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'tolk' has no attribute {name!r}")
