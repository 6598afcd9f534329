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


POOL_MIN_BYTES = 1 << 16  # allocations this large or larger are kept for reuse when freed
POOL_BYTES = 1 << 28  # freed bytes a device keeps for reuse, at most


class _Lease:
    """The owner of one pooled allocation's bytes as numpy sees them: every array over them
    (views too) keeps it alive, so its death says that the bytes are free again."""

    __slots__ = ("mem", "__array_interface__", "__weakref__")

    def __init__(self, mem: np.ndarray):
        self.mem = mem
        self.__array_interface__ = {"shape": mem.shape, "typestr": "|u1",
                                    "data": (mem.ctypes.data, False), "version": 3}


class Device:
    """One CPU device: allocates raw bytes (zero-initialised unless the caller fills them)
    and counts what it holds.

    Freed allocations of `POOL_MIN_BYTES` or more are kept (up to `POOL_BYTES` in all) and
    handed out again for the same size: a program run again reuses its memory where fresh
    memory would be faulted in page by page every time (a few times the cost of the
    arithmetic on it). `release_pool` gives them back to the system."""

    def __init__(self, name: str):
        self.name = name
        self.allocated_bytes = 0
        self.peak_bytes = 0
        self.pooled_bytes = 0
        self._pool: dict[int, list[np.ndarray]] = {}
        self.lock = threading.RLock()  # (a lease may die, and come back, inside a locked step)

    def alloc(self, nbytes: int, zeroed: bool = True) -> np.ndarray:
        """Raw storage of `nbytes` (not zeroed with ``zeroed=False``: for bytes the caller
        writes at once); raises `MemoryError` naming the device when it fails."""
        mem = None
        if nbytes >= POOL_MIN_BYTES:
            with self.lock:
                free = self._pool.get(nbytes)
                if free:
                    mem = free.pop()
                    self.pooled_bytes -= nbytes
        if mem is None:
            mem = self._fresh(nbytes, zeroed)
        elif zeroed:
            mem.fill(0)
        with self.lock:
            self.allocated_bytes += nbytes
            self.peak_bytes = max(self.peak_bytes, self.allocated_bytes)
        if nbytes < POOL_MIN_BYTES:
            weakref.finalize(mem, self._release, nbytes)
            return mem
        lease = _Lease(mem)
        weakref.finalize(lease, self._release, nbytes, mem)
        return np.asarray(lease)

    def _fresh(self, nbytes: int, zeroed: bool) -> np.ndarray:
        make = np.zeros if zeroed else np.empty
        try:
            try:
                return make(nbytes, dtype=np.uint8)
            except (MemoryError, ValueError):
                if not self.pooled_bytes:
                    raise
                self.release_pool()  # the kept bytes first, then once more
                return make(nbytes, dtype=np.uint8)
        except (MemoryError, ValueError) as e:
            raise MemoryError(f"{self.name}: cannot allocate {nbytes} bytes ({e})") from None

    def _release(self, nbytes: int, mem: np.ndarray | None = None) -> None:
        with self.lock:
            self.allocated_bytes -= nbytes
            if mem is not None and self.pooled_bytes + nbytes <= POOL_BYTES:
                self._pool.setdefault(nbytes, []).append(mem)
                self.pooled_bytes += nbytes

    def release_pool(self) -> None:
        """Free the allocations kept for reuse."""
        with self.lock:
            self._pool = {}
            self.pooled_bytes = 0

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
    src = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    if src.size != buf.nbytes:
        raise ValueError(f"{buf.short()} needs {buf.nbytes} bytes, got {src.size}")
    raw = get_device(buf.device).alloc(buf.nbytes, zeroed=False)
    raw[:] = src
    with _storage_lock:
        _storage[buf] = raw


# called with ``(buf, copy)`` after `copy_buffer` copies a buffer's contents (`tolk.gradient`
# records what the copy came from)
after_copy: list = []


def copy_buffer(buf: UOp, data: np.ndarray | None = None) -> UOp:
    """A new user BUFFER like `buf` holding a copy of its contents (or of `data`)."""
    new = UOp.buffer(buf.dtype, buf.size, buf.device)
    set_storage(new, buffer_storage(buf) if data is None else data)
    if data is None and after_copy:
        after_copy[0](buf, new)
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
