"""A gzip encoder whose bytes depend on nothing but its input and this file.

Why not the zlib module: its output depends on the zlib it was built with. zlib-ng, the
zlib of some Python builds and distributions, compresses the preflight script at level 9 to
16,291 bytes where zlib 1.2.13 gives 16,255, and different bytes. The compressed script is
an input of every node's preflight command, so a program run where Python has another zlib
would show every node's preflight as changed (and re-run it). Any gzip decodes this output;
only the encoding is ours: LZ77 with hash chains and one step of lazy matching, as zlib does,
then one block with its own Huffman codes (RFC 1951), in a gzip frame without a name or a
time (RFC 1952). Its output is within 1% of zlib's level 9 on the preflight script.

Changing anything here changes the bytes sent to every machine, so the tests pin them.
"""

from __future__ import annotations

import bisect
import heapq
import zlib

WINDOW = 32768
MIN_MATCH = 3
MAX_MATCH = 258
# Candidates tried per position: longer finds slightly longer matches, slowly.
MAX_CHAIN = 128

# RFC 1951 3.2.5: the first length (codes 257...) and distance (codes 0...) of each code, and its extra bits.
LENGTH_BASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
LENGTH_EXTRA = [0] * 8 + [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4 + [5] * 4 + [0]
DISTANCE_BASE = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769]
DISTANCE_BASE += [1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
DISTANCE_EXTRA = [0, 0] + [n for n in range(14) for _ in range(2)]
# RFC 1951 3.2.7: the order in which the code lengths of the code-length alphabet are sent.
CODE_LENGTH_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
END_OF_BLOCK = 256
# ID1 ID2, CM=deflate, FLG=0 (no name, comment or extra), MTIME=0, XFL=0, OS=255 (unknown).
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"

Token = int | tuple[int, int]  # a literal byte, or (length, distance)


def gzip_compress(data: bytes) -> bytes:
    """data as a gzip member; `gzip -dc` and Python's gzip.decompress give data back."""
    trailer = zlib.crc32(data).to_bytes(4, "little") + (len(data) % 2**32).to_bytes(4, "little")
    return GZIP_HEADER + deflate(data) + trailer


def deflate(data: bytes) -> bytes:
    """data as one final deflate block with dynamic Huffman codes (BTYPE 10)."""
    tokens = lz77(data)
    literal_counts, distance_counts = [0] * 286, [0] * 30
    for token in tokens:
        if isinstance(token, int):
            literal_counts[token] += 1
        else:
            literal_counts[257 + _length_code(token[0])] += 1
            distance_counts[_distance_code(token[1])] += 1
    literal_counts[END_OF_BLOCK] = 1
    literal_lengths = code_lengths(literal_counts, 15)
    distance_lengths = code_lengths(distance_counts, 15)
    hlit = _used(literal_lengths)
    hdist = _used(distance_lengths)
    # Code lengths are sent as they are, without the run-length codes 16-18: they would
    # save some 50 bytes, and this is simpler.
    lengths = literal_lengths[:hlit] + distance_lengths[:hdist]
    meta_counts = [0] * 19
    for length in lengths:
        meta_counts[length] += 1
    meta_lengths = code_lengths(meta_counts, 7)
    hclen = max(4, _used([meta_lengths[symbol] for symbol in CODE_LENGTH_ORDER]))

    out = _BitWriter()
    out.bits(1, 1)  # BFINAL: the only block
    out.bits(2, 2)  # BTYPE 10: dynamic Huffman codes
    out.bits(hlit - 257, 5)
    out.bits(hdist - 1, 5)
    out.bits(hclen - 4, 4)
    for symbol in CODE_LENGTH_ORDER[:hclen]:
        out.bits(meta_lengths[symbol], 3)
    meta_codes = canonical_codes(meta_lengths)
    for length in lengths:
        out.code(meta_codes[length], meta_lengths[length])
    literal_codes, distance_codes = canonical_codes(literal_lengths), canonical_codes(distance_lengths)
    for token in tokens:
        if isinstance(token, int):
            out.code(literal_codes[token], literal_lengths[token])
            continue
        length, distance = token
        lc, dc = _length_code(length), _distance_code(distance)
        out.code(literal_codes[257 + lc], literal_lengths[257 + lc])
        out.bits(length - LENGTH_BASE[lc], LENGTH_EXTRA[lc])
        out.code(distance_codes[dc], distance_lengths[dc])
        out.bits(distance - DISTANCE_BASE[dc], DISTANCE_EXTRA[dc])
    out.code(literal_codes[END_OF_BLOCK], literal_lengths[END_OF_BLOCK])
    return out.finish()


def lz77(data: bytes) -> list[Token]:
    """data as literals and back-references, each position's longest match found through a hash
    chain; a match is put off by one byte when the next position has a longer one (lazy matching)."""
    size = len(data)
    head: dict[bytes, int] = {}  # last position of each 3-byte string
    previous = [-1] * size  # the position before it with the same 3 bytes

    def insert(pos: int) -> None:
        if pos + MIN_MATCH <= size:
            key = data[pos : pos + MIN_MATCH]
            previous[pos] = head.get(key, -1)
            head[key] = pos

    def longest(pos: int) -> tuple[int, int]:
        """The longest earlier match at pos, nearest first among equals: (length, distance), or (0, 0)."""
        limit = min(MAX_MATCH, size - pos)
        if limit < MIN_MATCH:
            return 0, 0
        best_length, best_distance = 0, 0
        candidate = head.get(data[pos : pos + MIN_MATCH], -1)
        for _ in range(MAX_CHAIN):
            if candidate < 0 or pos - candidate > WINDOW:
                break
            # Only a candidate that also matches at best_length can be longer.
            if data[candidate + best_length] == data[pos + best_length] or best_length == 0:
                length = MIN_MATCH
                while length < limit and data[candidate + length] == data[pos + length]:
                    length += 1
                if length > best_length:
                    best_length, best_distance = length, pos - candidate
                    if length == limit:
                        break
            candidate = previous[candidate]
        return best_length, best_distance

    tokens: list[Token] = []
    pos = 0
    match = longest(pos)
    while pos < size:
        insert(pos)
        length, distance = match
        if length >= MIN_MATCH:
            following = longest(pos + 1) if pos + 1 < size else (0, 0)
            if following[0] > length:
                tokens.append(data[pos])
                pos += 1
                match = following
                continue
            tokens.append((length, distance))
            for covered in range(pos + 1, pos + length):
                insert(covered)
            pos += length
        else:
            tokens.append(data[pos])
            pos += 1
        match = longest(pos) if pos < size else (0, 0)
    return tokens


def code_lengths(counts: list[int], limit: int) -> list[int]:
    """Huffman code lengths for counts, none longer than limit.

    Ties go to the lower symbol, so equal counts give equal lengths on every run. Over the
    limit, the counts are halved (rounding up, so that no used symbol drops out) and the code
    built again. At least two symbols get a code: zlib refuses a code-length code that is
    not complete, and one symbol alone cannot make one."""
    counts = list(counts)
    used = [symbol for symbol, count in enumerate(counts) if count]
    for symbol in range(len(counts)):
        if len(used) >= 2:
            break
        if not counts[symbol]:
            counts[symbol] = 1
            used.append(symbol)
    while True:
        lengths = [0] * len(counts)
        # (count, tiebreak, symbols under this node); the tiebreak keeps the order fixed.
        heap = [(counts[symbol], symbol, [symbol]) for symbol in used]
        heapq.heapify(heap)
        tiebreak = len(counts)
        while len(heap) > 1:
            count_a, _, symbols_a = heapq.heappop(heap)
            count_b, _, symbols_b = heapq.heappop(heap)
            for symbol in symbols_a + symbols_b:
                lengths[symbol] += 1
            heapq.heappush(heap, (count_a + count_b, tiebreak, symbols_a + symbols_b))
            tiebreak += 1
        if max(lengths) <= limit:
            return lengths
        counts = [(count + 1) // 2 for count in counts]


def canonical_codes(lengths: list[int]) -> list[int]:
    """RFC 1951 3.2.2: each symbol's code, from the lengths alone, bit-reversed to be written LSB first."""
    per_length = [0] * 16
    for length in lengths:
        per_length[length] += 1
    per_length[0] = 0
    next_code, code = [0] * 16, 0
    for length in range(1, 16):
        code = (code + per_length[length - 1]) << 1
        next_code[length] = code
    codes = [0] * len(lengths)
    for symbol, length in enumerate(lengths):
        if length:
            codes[symbol] = int(f"{next_code[length]:0{length}b}"[::-1], 2)
            next_code[length] += 1
    return codes


class _BitWriter:
    """Bits packed into bytes from the least significant bit on (RFC 1951 3.1.1)."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.pending = 0
        self.count = 0

    def bits(self, value: int, count: int) -> None:
        self.pending |= value << self.count
        self.count += count
        while self.count >= 8:
            self.out.append(self.pending & 0xFF)
            self.pending >>= 8
            self.count -= 8

    # Huffman codes arrive bit-reversed (canonical_codes), so they go out as plain bits.
    code = bits

    def finish(self) -> bytes:
        if self.count:
            self.out.append(self.pending & 0xFF)
        return bytes(self.out)


def _length_code(length: int) -> int:
    return bisect.bisect_right(LENGTH_BASE, length) - 1


def _distance_code(distance: int) -> int:
    return bisect.bisect_right(DISTANCE_BASE, distance) - 1


def _used(lengths: list[int]) -> int:
    """How many leading entries to send: up to the last non-zero one."""
    return max(i for i, length in enumerate(lengths) if length) + 1
