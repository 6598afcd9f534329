"""Export and import of UOp graphs: a versioned, self-describing byte format (no pickle, no eval).

Layout (all integers are LEB128 varints; signed ones zigzag-encoded)::

    b"TOLKGRAPH\\0"  version
    nstrings  { len utf8 }*            op and dtype names, referred to by index
    nnodes    { op dtype nsrc {src}* arg }*   children before parents; src < own index
                                       root = the last node

Args use the canonical encoding of `tolk.uop.ops.encode_arg`. Import checks every count
against the bytes that remain, so hostile input is rejected in time and memory linear in its
length, always with `ValueError`.
"""

from __future__ import annotations

import struct
from typing import Any

from tolk.dtype import ALL_DTYPES
from tolk.errors import GraphFormatError
from tolk.uop.ops import (ARG_TYPES, MAX_ARG_DEPTH, Ops, UOp, _uvarint, encode_arg,
                          fresh_internal_buffer_slot)

MAGIC = b"TOLKGRAPH\x00"
VERSION = 1


def export_graph(root: UOp) -> bytes:
    """Serialize the graph under `root` (every reachable node) to bytes; a `root` that is no
    UOp is a TypeError."""
    if not isinstance(root, UOp):
        raise TypeError(f"export_graph needs a UOp, got {type(root).__name__}")
    nodes = root.toposort()
    strings: dict[str, int] = {}
    for n in nodes:
        strings.setdefault(n.op.name, len(strings))
        strings.setdefault(n.dtype.name, len(strings))
    ids = {n: i for i, n in enumerate(nodes)}
    out = bytearray(MAGIC)
    _uvarint(VERSION, out)
    _uvarint(len(strings), out)
    for s in strings:
        b = s.encode()
        _uvarint(len(b), out)
        out += b
    _uvarint(len(nodes), out)
    for n in nodes:
        _uvarint(strings[n.op.name], out)
        _uvarint(strings[n.dtype.name], out)
        _uvarint(len(n.src), out)
        for s in n.src:
            _uvarint(ids[s], out)
        encode_arg(n.arg, out)
    return bytes(out)


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def fail(self, what: str) -> GraphFormatError:
        return GraphFormatError(f"bad tolk graph at byte {self.pos}: {what}")

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise self.fail("unexpected end of data")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def take(self, n: int) -> bytes:
        if n > self.remaining():
            raise self.fail(f"declared length {n} exceeds the {self.remaining()} bytes left")
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def uvarint(self) -> int:
        pos = self.pos
        if pos < len(self.data) and self.data[pos] < 0x80:  # one-byte fast path
            self.pos = pos + 1
            return self.data[pos]
        out = shift = 0
        for _ in range(10):
            b = self.byte()
            out |= (b & 0x7F) << shift
            if b < 0x80:
                return out
            shift += 7
        raise self.fail("varint longer than 10 bytes")

    def svarint(self) -> int:
        z = self.uvarint()
        if z >= 1 << 64:
            raise self.fail("integer out of the 64-bit range")
        return (z >> 1) ^ -(z & 1)

    def count(self, what: str, min_bytes_each: int = 1) -> int:
        n = self.uvarint()
        if n * min_bytes_each > self.remaining():
            raise self.fail(f"{what} count {n} exceeds what {self.remaining()} bytes can hold")
        return n

    def string(self) -> str:
        try:
            return self.take(self.count("string length")).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("string is not valid UTF-8") from None

    def arg(self, depth: int = 0) -> Any:
        if depth > MAX_ARG_DEPTH:
            raise self.fail(f"arg nested deeper than {MAX_ARG_DEPTH}")
        tag = self.byte()
        if tag == 0x4E:  # N
            return None
        if tag == 0x54:  # T
            return True
        if tag == 0x46:  # F
            return False
        if tag == 0x69:  # i
            return self.svarint()
        if tag == 0x49:  # I: an int past int64, as sign and magnitude
            negative, magnitude = self.byte(), self.uvarint()
            if negative > 1 or not (1 << 63) + negative <= magnitude < (1 << 64):
                raise self.fail(f"wide integer ({negative}, {magnitude}) is not canonical")
            return -magnitude if negative else magnitude
        if tag == 0x66:  # f
            return struct.unpack("<d", self.take(8))[0]
        if tag == 0x73:  # s
            return self.string()
        if tag == 0x62:  # b
            return bytes(self.take(self.count("bytes length")))
        if tag == 0x74:  # t
            return tuple(self.arg(depth + 1) for _ in range(self.count("tuple length")))
        if tag in (0x4F, 0x44):  # O, D
            name = self.arg(depth + 1)
            table = Ops.__members__ if tag == 0x4F else ALL_DTYPES
            if not isinstance(name, str) or name not in table:
                raise self.fail(f"unknown {'op' if tag == 0x4F else 'dtype'} name {name!r}")
            return table[name]
        if tag == 0x4B:  # K
            name, fields = self.arg(depth + 1), self.arg(depth + 1)
            cls = ARG_TYPES.get(name) if isinstance(name, str) else None
            if cls is None or not isinstance(fields, tuple):
                raise self.fail(f"unknown arg type {name!r}")
            try:
                return cls(*fields)
            except TypeError as e:
                raise self.fail(f"bad fields for arg type {name}: {e}") from None
        raise self.fail(f"unknown arg tag 0x{tag:02x}")


def _check_node(r: _Reader, op: Ops, arg: Any, nsrc: int) -> None:
    if op in (Ops.BUFFER, Ops.PARAM):
        ok = (
            isinstance(arg, tuple) and len(arg) == 3 and type(arg[0]) is int
            and isinstance(arg[1], str) and type(arg[2]) is int and arg[2] >= 0 and nsrc == 0
        )
        if not ok:
            raise r.fail(f"{op.name} needs arg (slot:int, device:str, size:int>=0) and no "
                         f"sources, got {arg!r} with {nsrc} sources")
        if op is Ops.PARAM and arg[0] < 0:
            raise r.fail(f"PARAM slot must be >= 0, got {arg[0]}")


def import_graph(data: bytes, keep_internal_slots: bool = False) -> UOp:
    """Rebuild a graph from `export_graph` bytes.

    Internal (negative-slot) BUFFERs get fresh slots from this process's counter, one per
    distinct original slot, so an imported graph never aliases a buffer minted here; pass
    ``keep_internal_slots=True`` to keep the original slots. Raises `GraphFormatError`
    (a `ValueError`) for anything malformed, truncated or hostile.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise GraphFormatError(f"import_graph needs bytes, got {type(data).__name__}")
    r = _Reader(bytes(data))
    if r.take(len(MAGIC)) != MAGIC if r.remaining() >= len(MAGIC) else True:
        raise GraphFormatError("not a tolk graph: missing magic header")
    version = r.uvarint()
    if version != VERSION:
        raise r.fail(f"unsupported format version {version} (this tolk reads {VERSION})")
    strings = [r.string() for _ in range(r.count("string table"))]
    nnodes = r.count("node", min_bytes_each=4)
    if nnodes == 0:
        raise r.fail("graph has no nodes")
    nodes: list[UOp] = []
    renumber: dict[int, int] = {}
    for i in range(nnodes):
        op_i, dt_i = r.uvarint(), r.uvarint()
        if op_i >= len(strings) or dt_i >= len(strings):
            raise r.fail(f"node {i}: string index out of range")
        op, dt = Ops.__members__.get(strings[op_i]), ALL_DTYPES.get(strings[dt_i])
        if op is None or dt is None:
            raise r.fail(f"node {i}: unknown op {strings[op_i]!r} or dtype {strings[dt_i]!r}")
        nsrc = r.count("source")
        src = []
        for _ in range(nsrc):
            j = r.uvarint()
            if j >= i:
                raise r.fail(f"node {i}: source index {j} is not an earlier node")
            src.append(nodes[j])
        arg = r.arg()
        _check_node(r, op, arg, nsrc)
        if op is Ops.BUFFER and arg[0] < 0 and not keep_internal_slots:
            if arg[0] not in renumber:
                renumber[arg[0]] = fresh_internal_buffer_slot()
            arg = (renumber[arg[0]], arg[1], arg[2])
        try:
            nodes.append(UOp(op, dt, tuple(src), arg))
        except TypeError as e:  # an arg that is unhashable cannot come out of the decoder
            raise r.fail(f"node {i}: {e}") from None
    if r.remaining():
        raise r.fail(f"{r.remaining()} trailing bytes after the last node")
    return nodes[-1]
