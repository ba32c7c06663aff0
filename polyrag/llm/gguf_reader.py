"""``gguf.GGUFReader`` over a plain array, for GGUFs with a large vocabulary.

The reader parses the tokenizer's arrays one string at a time, slicing an ``np.memmap`` of the
file; every slice of a memmap runs numpy's Python-level ``memmap.__array_finalize__``. For Gemma 3's
262k-token vocabulary that is most of the reading: 9.4 s per read, 3.2 s over a plain ``ndarray``
view of the same mapping (2 idle cores). Converting the GGUF to a ``transformers`` checkpoint reads
it three times (tokenizer, config, weights) and every merge of the student's adapter once more.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import gguf
import numpy as np


class PlainArrayGGUFReader(gguf.GGUFReader):
    """The same fields and tensors as ``gguf.GGUFReader``; the file stays memory-mapped (the plain
    view keeps the memmap as its base), only the slices are plain arrays."""

    def _get(self, offset, dtype, count=1, override_order=None):
        if isinstance(self.data, np.memmap):  # the first read, from the reader's __init__
            self.data = self.data.view(np.ndarray)
        return super()._get(offset, dtype, count, override_order)


@contextlib.contextmanager
def plain_array_gguf_reading() -> Iterator[None]:
    """``gguf.GGUFReader`` is the plain-array reader inside the block: ``transformers`` imports it
    from ``gguf`` each time it reads a GGUF. Not for use beside other threads reading GGUFs."""
    stock = gguf.GGUFReader
    gguf.GGUFReader = PlainArrayGGUFReader
    try:
        yield
    finally:
        gguf.GGUFReader = stock
