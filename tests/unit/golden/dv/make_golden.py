"""Writes the golden deletion vector files. Run only when the DV format version changes:
the tests compare freshly encoded bytes against these files."""

import os
import sys

from pyroaring import BitMap64

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "adapter"))
from tablets.storage.dv import encode

CASES = {
    "empty": [],
    "sparse": [0, 3, 1000, 65535, 65536, 2**31],
    "dense": list(range(100_000)),
    "beyond_2_32": [1, 2**32, 2**32 + 7, 5 * 2**32 + 3],
}

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    for name, values in CASES.items():
        with open(os.path.join(here, f"{name}.bin"), "wb") as f:
            f.write(encode(BitMap64(values)))
