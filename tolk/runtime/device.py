"""CPU devices with their own allocations, and the storage bound to BUFFER nodes.

Device names are strings: ``CPU`` (also spelled ``CPU:0``) and ``CPU:1``, ``CPU:2`` ... are
distinct devices. A device allocates raw bytes (numpy uint8 arrays); a buffer of dtype d is
a typed view of them; a SLICE is a view into its arena's bytes. Storage is bound to BUFFER
nodes weakly: when nothing references a BUFFER node any more, its bytes are freed.
"""

from __future__ import annotations

import re
import threading
import weakref

import numpy as np

from tolk.errors import DeviceError
from tolk.uop.ops import Ops, UOp

_NAME = re.compile(r"^CPU(?::(\d+))?$")


class Device:
    """One CPU device: allocates zero-initialised raw bytes and counts what it holds."""

    def __init__(self, name: str):
        self.name = name
        self.allocated_bytes = 0
        self.peak_bytes = 0
        self.lock = threading.Lock()

    def alloc(self, nbytes: int) -> np.ndarray:
        """Raw storage of `nbytes`; raises `MemoryError` naming the device when it fails."""
        try:
            raw = np.zeros(nbytes, dtype=np.uint8)
        except (MemoryError, ValueError) as e:
            raise MemoryError(f"{self.name}: cannot allocate {nbytes} bytes ({e})") from None
        with self.lock:
            self.allocated_bytes += nbytes
            self.peak_bytes = max(self.peak_bytes, self.allocated_bytes)
        weakref.finalize(raw, self._release, nbytes)
        return raw

    def _release(self, nbytes: int) -> None:
        with self.lock:
            self.allocated_bytes -= nbytes

    def __repr__(self) -> str:
        return f"Device({self.name!r})"


_devices: dict[str, Device] = {}
_devices_lock = threading.Lock()


def canonical_device(name: str) -> str:
    """The canonical spelling of a device name; `DeviceError` for an unknown one."""
    if not isinstance(name, str):
        raise DeviceError(f"a device name must be a string, got {type(name).__name__}")
    m = _NAME.match(name.upper())
    if m is None:
        raise DeviceError(f"unknown device {name!r}: devices are 'CPU', 'CPU:1', 'CPU:2', ...")
    n = int(m.group(1) or 0)
    return "CPU" if n == 0 else f"CPU:{n}"


def get_device(name: str) -> Device:
    name = canonical_device(name)
    with _devices_lock:
        if name not in _devices:
            _devices[name] = Device(name)
        return _devices[name]


# storage bound to BUFFER nodes, freed when the node dies
_storage: weakref.WeakKeyDictionary[UOp, np.ndarray] = weakref.WeakKeyDictionary()
_storage_lock = threading.Lock()


def has_storage(buf: UOp) -> bool:
    return buf in _storage


def buffer_storage(buf: UOp) -> np.ndarray:
    """The raw bytes of a BUFFER node, allocated on its device the first time they are needed."""
    raw = _storage.get(buf)
    if raw is None:
        if buf.op is not Ops.BUFFER:
            raise DeviceError(f"only BUFFER nodes have storage, got {buf.short()}")
        try:
            raw = get_device(buf.device).alloc(buf.nbytes)
        except MemoryError as e:
            raise MemoryError(f"{buf.device}: cannot allocate {buf.nbytes} bytes for "
                              f"{buf.short()}: {e}") from e
        with _storage_lock:
            raw = _storage.setdefault(buf, raw)
    return raw


def set_storage(buf: UOp, data: np.ndarray) -> None:
    """Bind host data (any numpy array of exactly the buffer's bytes) to a BUFFER node."""
    raw = get_device(buf.device).alloc(buf.nbytes)
    src = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    if src.size != buf.nbytes:
        raise ValueError(f"{buf.short()} needs {buf.nbytes} bytes, got {src.size}")
    raw[:] = src
    with _storage_lock:
        _storage[buf] = raw


def copy_buffer(buf: UOp, data: np.ndarray | None = None) -> UOp:
    """A new user BUFFER like `buf` holding a copy of its contents (or of `data`)."""
    new = UOp.buffer(buf.dtype, buf.size, buf.device)
    set_storage(new, buffer_storage(buf) if data is None else data)
    return new


def typed_view(arg: UOp) -> np.ndarray:
    """A flat typed numpy view of a BUFFER or of a SLICE of an arena (no copy)."""
    if arg.op is Ops.BUFFER:
        raw = buffer_storage(arg)
    elif arg.op is Ops.SLICE:
        off, nbytes = arg.arg
        raw = buffer_storage(arg.src[0])[off : off + nbytes]
    else:
        raise DeviceError(f"cannot bind storage to {arg.short()}")
    return raw.view(arg.dtype.np)
