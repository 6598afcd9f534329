"""tolk: a tensor compiler layer whose centre is the linear schedule."""

__version__ = "0.1.0"
