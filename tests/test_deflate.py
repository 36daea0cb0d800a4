"""components/deflate.py: any gzip decodes it, and its bytes never change unnoticed."""

from __future__ import annotations

import gzip
import hashlib
import random
import subprocess

import pytest

from components.deflate import code_lengths, gzip_compress
from components.preflight import preflight_script

SAMPLES = {
    "empty": b"",
    "one byte": b"x",
    "a run longer than a match": b"a" * 1000,
    "every byte value": bytes(range(256)) * 3,
    "random bytes": random.Random(7).randbytes(5000),
    "matches as far back as the window": random.Random(8).randbytes(32768) * 2,
    "the preflight script": preflight_script().encode(),
}


@pytest.mark.parametrize("data", SAMPLES.values(), ids=SAMPLES.keys())
def test_python_gzip_decodes_it(data: bytes):
    assert gzip.decompress(gzip_compress(data)) == data


def test_the_gzip_command_decodes_it():
    data = preflight_script().encode()
    proc = subprocess.run(["gzip", "-dc"], input=gzip_compress(data), capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data


def test_no_name_and_no_time_in_the_header():
    header = gzip_compress(b"text")[:10]
    assert header[3] == 0, "FLG: no file name, comment or extra field"
    assert header[4:8] == b"\0\0\0\0", "MTIME"


def test_the_bytes_are_pinned():
    # Every node's preflight stdin is these bytes: a change here re-runs preflight on every node
    # of every stack. Change the digest only on purpose.
    text = b"".join(f"check_{i % 7}() {{ echo 'node {i}: ok'; }}\n".encode() for i in range(400))
    packed = gzip_compress(text)
    assert (len(text), len(packed)) == (13890, 1130)
    assert hashlib.sha256(packed).hexdigest() == "a9f7192063b0ef722662d1a03ff02cee39f3c09d40fe667a6d076c1479a33ad4"


def test_code_lengths_keep_to_the_limit_and_make_a_complete_code():
    # Counts like Fibonacci numbers give the deepest Huffman tree: 25 symbols would need 24 bits.
    counts = [1, 1]
    while len(counts) < 25:
        counts.append(counts[-1] + counts[-2])
    lengths = code_lengths(counts, 15)
    assert max(lengths) <= 15, lengths
    assert sum(2.0**-length for length in lengths) == 1.0, lengths
