#!/usr/bin/env python3
"""all-MiniLM-L6-v2 (examples/minilm: BERT encoder, mean pooling, L2 normalisation) in torch
eager, torch.compile (Inductor) and onnxruntime (the model exported by torch.onnx.export, every
graph optimisation on), timed on the same made-up batches as the example's `--bench`:

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install torch transformers onnx onnxscript onnxruntime
    cargo run --release --example minilm -- --threads 1 --bench 1x128 --bench 8x128   # fetches the checkpoint
    taskset -c 0 /tmp/peers/bin/python benches/peers/minilm_peers.py --threads 1

It reads the checkpoint the example fetched (config.json and model.safetensors in the cache:
$TFN_MINILM_DIR, else minilm/ under $TFN_CACHE_DIR, $XDG_CACHE_HOME/tfn or ~/.cache/tfn).
Prints per engine and shape the first call (compile included) and the median of --calls
calls, in ms, as Markdown table rows.
"""
import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import torch


def cache_dir():
    if os.environ.get("TFN_MINILM_DIR"):
        return os.environ["TFN_MINILM_DIR"]
    root = os.environ.get("TFN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tfn")
    return os.path.join(root, "minilm")


class Embed(torch.nn.Module):
    """BertModel, mean pooling over the mask, F.normalize: sentence-transformers' pipeline."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, ids, mask, types):
        h = self.bert(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
        m = mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=1)


def batch(b, t):
    """The example's --bench batch: [CLS] made-up ids [SEP], no padding."""
    ids = np.zeros((b, t), np.int64)
    for r in range(b):
        for j in range(t):
            ids[r, j] = 101 if j == 0 else 102 if j == t - 1 else 1000 + (r * 7919 + j * 104729) % 28000
    return ids, np.ones((b, t), np.int64), np.zeros((b, t), np.int64)


def timed(run, calls):
    start = time.perf_counter()
    run()
    first = (time.perf_counter() - start) * 1e3
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    return first, statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--shapes", default="1x128,8x128")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile (slow to compile)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from transformers import BertModel
    import onnxruntime as ort

    bert = BertModel.from_pretrained(cache_dir(), add_pooling_layer=False).eval()
    model = Embed(bert).eval()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    rows = []
    with torch.inference_mode():
        for b, t in shapes:
            x = [torch.from_numpy(a) for a in batch(b, t)]
            rows.append(("torch eager", b, t, *timed(lambda: model(*x), args.calls)))
        if not args.no_compile:
            compiled = torch.compile(model, dynamic=True)
            for b, t in shapes:
                x = [torch.from_numpy(a) for a in batch(b, t)]
                rows.append(("torch.compile", b, t, *timed(lambda: compiled(*x), args.calls)))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "minilm.onnx")
        x = [torch.from_numpy(a) for a in batch(2, 16)]
        start = time.perf_counter()
        torch.onnx.export(model, tuple(x), path, input_names=["ids", "mask", "types"],
                          output_names=["emb"], opset_version=17, dynamo=False,
                          dynamic_axes={n: {0: "b", 1: "t"} for n in ("ids", "mask", "types")})
        export = (time.perf_counter() - start) * 1e3
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.intra_op_num_threads = args.threads
        opts.inter_op_num_threads = 1
        start = time.perf_counter()
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        load = (time.perf_counter() - start) * 1e3
        for b, t in shapes:
            ids, mask, types = batch(b, t)
            feed = {"ids": ids, "mask": mask, "types": types}
            got = sess.run(None, feed)[0]
            with torch.inference_mode():
                want = model(*[torch.from_numpy(a) for a in (ids, mask, types)]).numpy()
            assert np.abs(got - want).max() < 1e-4, np.abs(got - want).max()
            rows.append(("onnxruntime", b, t, *timed(lambda: sess.run(None, feed), args.calls)))
        print(f"(onnx export {export:.0f} ms, session load {load:.0f} ms)")
    print(f"| engine | threads | batch | first call (ms) | median of {args.calls} (ms) |")
    print("|---|---|---|---|---|")
    for name, b, t, first, median in rows:
        print(f"| {name} | {args.threads} | {b} × {t} | {first:.1f} | {median:.2f} |")


if __name__ == "__main__":
    main()
