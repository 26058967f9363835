"""Converts scikit-learn's copy of the UCI digits into the two .npy files next to this script.

    pip download scikit-learn --no-deps -d /tmp/skl && cd /tmp/skl && unzip -o *.whl \
        sklearn/datasets/data/digits.csv.gz
    python3 examples/cnn/data/make_digits.py /tmp/skl/sklearn/datasets/data/digits.csv.gz

digits.csv.gz has 1797 rows of 65 integers: 64 pixels (an 8x8 image, row-major, values 0..16)
then the class 0..9. The files keep that order; the train/test split is made by main.rs.
"""

import gzip
import pathlib
import sys

import numpy as np

src = pathlib.Path(sys.argv[1])
with gzip.open(src, "rt") as f:
    rows = np.loadtxt(f, delimiter=",", dtype=np.int64)
assert rows.shape == (1797, 65), rows.shape
pixels, labels = rows[:, :64], rows[:, 64]
assert pixels.min() == 0 and pixels.max() == 16 and set(labels) == set(range(10))
out = pathlib.Path(__file__).resolve().parent
np.save(out / "images.npy", pixels.reshape(1797, 1, 8, 8).astype(np.float32))
np.save(out / "labels.npy", labels.astype(np.int64))
print("wrote", out / "images.npy", out / "labels.npy", np.bincount(labels))
