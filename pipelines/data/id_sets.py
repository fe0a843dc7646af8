"""An immutable, picklable set of int64 row ids whose memory follows the range of its ids, not 8 bytes an id.

A registered model's training keys, the rows held out from every target, the reference's training rows: the nightly
holds several such sets at once and pickles them to every Beam worker. Row ids of real partitions are usually dense
(assigned in order at ingest), so a set is held as a bitmap over ``[low, high]`` (1 bit per possible id, 64 times
smaller than the ids when every id of the range is in the set) whenever that is no larger than the sorted ids; a
sparse set (ids spread over a range more than 64 times its size) keeps the sorted int64 ids.

    ids = IdSet.from_sorted(np.array([3, 5, 8]))    # sorted, unique
    builder = IdSetBuilder()                          # or streamed: sorted chunks, one after the other
    for chunk in batches:
        builder.add(chunk)
    ids = builder.build()
    ids.contains(row_ids)                             # bool mask, exact for any int64
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

# Bytes of bitmap unpacked at a time by `IdSet.to_array` (8 times as many bools).
_UNPACK_BYTES = 1 << 20
_BIT = np.array([1, 2, 4, 8, 16, 32, 64, 128], dtype=np.uint8)  # bit i of a byte is id low + 8 * byte + i
_UINT64 = 1 << 64


def _as_int64(ids, what: str) -> np.ndarray:
    array = np.asarray(ids)
    if array.dtype.kind not in "iu":
        if array.size == 0:
            return array.astype(np.int64)
        raise TypeError(f"{what} must be integers; got dtype {array.dtype}")
    return array.astype(np.int64, copy=False)


def _bitmap_bytes(low: int, high: int) -> int:
    return (high - low) // 8 + 1


class IdSet:
    """A set of distinct int64 ids: ``size`` ids from ``low`` to ``high``, held as a bitmap over that range
    (``kind`` ``"bitmap"``, numpy uint8, bit ``i`` of byte ``j`` is id ``low + 8 * j + i``) when it takes no more
    bytes than the sorted ids, else as the sorted int64 ids (``kind`` ``"array"``; an empty set too).

    Build it with `from_sorted` or `IdSetBuilder`; its arrays are read-only. ``contains`` answers membership
    for an array of ids; ``to_array`` gives the sorted ids back (8 bytes an id: for callers that need them)."""

    __slots__ = ("_bits", "_ids", "high", "low", "size")

    def __init__(self, size: int, low: int, high: int, bits: np.ndarray | None, ids: np.ndarray | None):
        # Not for direct use: `IdSetBuilder` checks the ids and chooses the representation.
        for array in (bits, ids):
            if array is not None:
                array.flags.writeable = False
        object.__setattr__(self, "size", int(size))
        object.__setattr__(self, "low", int(low))
        object.__setattr__(self, "high", int(high))
        object.__setattr__(self, "_bits", bits)
        object.__setattr__(self, "_ids", ids)

    def __setattr__(self, name, value):
        raise AttributeError(f"IdSet is immutable (cannot set {name!r})")

    def __reduce__(self):
        return IdSet, (self.size, self.low, self.high, self._bits, self._ids)

    @classmethod
    def empty(cls) -> IdSet:
        """The set of no id."""
        return cls(0, 0, -1, None, np.empty(0, dtype=np.int64))

    @classmethod
    def from_sorted(cls, ids) -> IdSet:
        """The set of ``ids``: integers, strictly increasing (ValueError otherwise). The ids are copied."""
        builder = IdSetBuilder()
        builder.add(ids)
        return builder.build()

    @property
    def kind(self) -> str:
        """``"bitmap"`` or ``"array"``: how the ids are held."""
        return "bitmap" if self._bits is not None else "array"

    @property
    def nbytes(self) -> int:
        """The bytes of the set's array (the bitmap or the sorted ids)."""
        return int((self._bits if self._bits is not None else self._ids).nbytes)

    def __len__(self) -> int:
        return self.size

    def contains(self, row_ids) -> np.ndarray:
        """A bool array shaped like ``row_ids``: True where the id is in the set (integers; others are a
        TypeError unless empty)."""
        ids = _as_int64(row_ids, "row_ids")
        if not self.size:
            return np.zeros(ids.shape, dtype=bool)
        if self._bits is None:
            at = np.minimum(np.searchsorted(self._ids, ids), self.size - 1)
            return self._ids[at] == ids
        # ids - low in uint64 wraps around for ids below low, so one comparison finds the ids in [low, high].
        offset = ids.view(np.uint64) - np.uint64(self.low % _UINT64)
        inside = offset <= np.uint64(self.high - self.low)
        offset = np.where(inside, offset, 0).astype(np.intp)
        return inside & ((self._bits[offset >> 3] & _BIT[offset & 7]) != 0)

    def to_array(self) -> np.ndarray:
        """The sorted ids as a new int64 array (8 bytes an id)."""
        if self._bits is None:
            return self._ids.copy()
        out = np.empty(self.size, dtype=np.int64)
        at = 0
        for found in _ids_of_bits(self._bits, self.low):
            out[at:at + found.size] = found
            at += found.size
        return out

    def __eq__(self, other) -> bool:
        if not isinstance(other, IdSet):
            return NotImplemented
        # The representation depends only on (size, low, high), so equal sets hold equal arrays.
        return ((self.size, self.low, self.high, self.kind) == (other.size, other.low, other.high, other.kind)
                and np.array_equal(self._bits if self._bits is not None else self._ids,
                                   other._bits if other._bits is not None else other._ids))

    __hash__ = None

    def __repr__(self) -> str:
        if not self.size:
            return "IdSet(empty)"
        return f"IdSet({self.size} ids in [{self.low}, {self.high}], {self.kind} of {self.nbytes} bytes)"


def _set_bits(bits: np.ndarray, ids: np.ndarray, origin: int) -> None:
    """Sets the bits of sorted ``ids`` in ``bits``, a bitmap whose bit 0 of byte 0 is id ``origin``."""
    offset = (ids.view(np.uint64) - np.uint64(origin % _UINT64)).astype(np.intp)
    byte = offset >> 3
    # Sorted ids: each byte's ids are adjacent, so one OR-reduction per byte sets them all at once.
    first = np.flatnonzero(np.r_[True, byte[1:] != byte[:-1]])
    bits[byte[first]] |= np.bitwise_or.reduceat(_BIT[offset & 7], first)


def _ids_of_bits(bits: np.ndarray, origin: int) -> Iterator[np.ndarray]:
    """The ids of a bitmap whose bit 0 of byte 0 is id ``origin``, in order, as int64 arrays (a piece at a time,
    so that the unpacked bits, a byte each, never cover the whole bitmap)."""
    for start in range(0, bits.size, _UNPACK_BYTES):
        found = np.flatnonzero(np.unpackbits(bits[start:start + _UNPACK_BYTES], bitorder="little"))
        yield found.astype(np.int64, copy=False) + (origin + 8 * start)


class IdSetBuilder:
    """An `IdSet` built from sorted ids given a chunk at a time (a file's batches, say), in one pass and without 8
    bytes an id for dense ids: each chunk is kept as a bitmap (aligned on the first id added) or as its ids,
    whichever is smaller, until `build` joins them in the set's own representation. The chunks kept take at most
    about as much as the set, so building peaks near twice the set's size.

        builder = IdSetBuilder()
        for ids in batches:
            builder.add(ids)
        ids_set = builder.build()
    """

    def __init__(self):
        self.size = 0
        self.low: int | None = None  # the first id added
        self.high: int | None = None  # the last
        self._pieces: list[tuple[int, np.ndarray]] = []  # (first byte, bitmap) or (-1, ids)

    def add(self, ids) -> None:
        """Adds ``ids``: integers, strictly increasing and greater than every id added before (ValueError
        otherwise, and nothing is added). The ids are copied."""
        ids = _as_int64(ids, "ids").ravel()
        if not ids.size:
            return
        if (self.high is not None and ids[0] <= self.high) or np.any(ids[1:] <= ids[:-1]):
            raise ValueError("the ids must be strictly increasing")
        low = int(ids[0]) if self.low is None else self.low
        first, last = (int(ids[0]) - low) >> 3, (int(ids[-1]) - low) >> 3
        if last - first + 1 <= 8 * ids.size:
            piece = np.zeros(last - first + 1, dtype=np.uint8)
            _set_bits(piece, ids, low + 8 * first)
            self._pieces.append((first, piece))
        else:
            self._pieces.append((-1, ids.copy()))
        self.low, self.high, self.size = low, int(ids[-1]), self.size + ids.size

    def build(self) -> IdSet:
        """The set of every id added (the builder is emptied)."""
        pieces, size, low, high = self._pieces, self.size, self.low, self.high
        self.__init__()
        if not size:
            return IdSet.empty()
        pieces.reverse()  # popped in order, so each piece is let go once it is in the set
        if _bitmap_bytes(low, high) <= 8 * size:
            bits = np.zeros(_bitmap_bytes(low, high), dtype=np.uint8)
            while pieces:
                first, piece = pieces.pop()
                if first < 0:
                    _set_bits(bits, piece, low)
                else:  # pieces that follow each other may share a byte
                    bits[first:first + piece.size] |= piece
            return IdSet(size, low, high, bits, None)
        if len(pieces) == 1 and pieces[0][0] < 0:  # the ids of one chunk, already copied
            return IdSet(size, low, high, None, pieces[0][1])
        ids, at = np.empty(size, dtype=np.int64), 0
        while pieces:
            first, piece = pieces.pop()
            for found in ([piece] if first < 0 else _ids_of_bits(piece, low + 8 * first)):
                ids[at:at + found.size] = found
                at += found.size
        return IdSet(size, low, high, None, ids)


__all__ = ["IdSet", "IdSetBuilder"]
