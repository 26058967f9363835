#!/usr/bin/env python3
"""The digit CNN of examples/cnn in jax: the same model, loss, AdamW update, learning-rate
schedule, train/test split and batch order, to compare accuracy and step times with tfn's.

    bash benches/peers/setup.sh
    # the same initial weights and batches as tfn:
    cargo run --release --example cnn -- --threads 1 --save-init /tmp/w --log tfn.csv
    taskset -c 0 benches/peers/.venv/bin/python benches/peers/cnn_jax.py --init /tmp/w --log jax.csv

The split and batch order are examples/cnn/data.rs's: Fisher-Yates shuffles driven by
SplitMix64 (for i from n-1 down to 1, swap i with next() % (i+1)); the split shuffles 0..1797
with seed 2024 and tests on the last 359; each epoch shuffles the training positions with one
generator seeded by --seed and cuts them into batches of --batch, the last one smaller.
"""
import argparse
import csv
import math
import os
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "examples", "cnn", "data")
MASK = (1 << 64) - 1
NAMES = ["w1", "b1", "w2", "b2", "w3", "b3"]


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)


def permutation(n, rng):
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        j = rng.next() % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def conv_block(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), [(1, 1), (1, 1)],
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
    y = jax.nn.relu(y + b[None, :, None, None])
    return jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def predict(p, x):
    h = conv_block(conv_block(x * 0.0625, p["w1"], p["b1"]), p["w2"], p["b2"])
    return h.reshape(h.shape[0], -1) @ p["w3"] + p["b3"]


def loss(p, x, y):
    logp = jax.nn.log_softmax(predict(p, x))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


@jax.jit
def step(p, m, v, x, y, lr, bc1, bc2, wd):
    value, g = jax.value_and_grad(loss)(p, x, y)
    new_p, new_m, new_v = {}, {}, {}
    for k in p:
        m1 = 0.9 * m[k] + 0.1 * g[k]
        v1 = 0.999 * v[k] + 0.001 * g[k] * g[k]
        decay = wd if k.startswith("w") else 0.0
        new_p[k] = p[k] - lr * ((m1 / bc1) / (jnp.sqrt(v1 / bc2) + 1e-8) + decay * p[k])
        new_m[k], new_v[k] = m1, v1
    return value, new_p, new_m, new_v


predict_jit = jax.jit(predict)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--weight-decay", type=float, default=1e-2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--init", required=True, help="DIR/NAME.npy from the example's --save-init")
    ap.add_argument("--log")
    args = ap.parse_args()

    images = np.load(os.path.join(DATA, "images.npy"))
    labels = np.load(os.path.join(DATA, "labels.npy"))
    order = permutation(len(labels), SplitMix64(2024))
    n_test = len(labels) // 5
    train_idx, test_idx = order[:-n_test], order[-n_test:]
    xtr, ytr = images[train_idx], labels[train_idx]
    xte, yte = jnp.asarray(images[test_idx]), labels[test_idx]
    p = {k: jnp.asarray(np.load(os.path.join(args.init, k + ".npy"))) for k in NAMES}
    m = {k: jnp.zeros_like(a) for k, a in p.items()}
    v = {k: jnp.zeros_like(a) for k, a in p.items()}

    rng = SplitMix64(args.seed)
    per_epoch = math.ceil(len(ytr) / args.batch)
    steps = args.epochs * per_epoch
    rows, times, s = [], [], 0
    started = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        perm = permutation(len(ytr), rng)
        for i in range(0, len(perm), args.batch):
            s += 1
            idx = perm[i:i + args.batch]
            progress = (s - 1) / max(steps - 1, 1)
            lr = args.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress)))
            t0 = time.perf_counter()
            value, p, m, v = step(p, m, v, xtr[idx], ytr[idx], np.float32(lr),
                                  np.float32(1 - 0.9 ** s), np.float32(1 - 0.999 ** s),
                                  np.float32(args.weight_decay))
            value = float(value)
            times.append(time.perf_counter() - t0)
            acc = ""
            if i + args.batch >= len(perm):
                acc = float(np.mean(np.argmax(np.asarray(predict_jit(p, xte)), axis=1) == yte))
            rows.append((s, epoch, value, acc, lr, times[-1] * 1e3))
    total = time.perf_counter() - started
    acc = float(np.mean(np.argmax(np.asarray(predict_jit(p, xte)), axis=1) == yte))
    later = sorted(times[per_epoch:])  # the first epoch includes two traces (full and last batch)
    print(f"jax {jax.__version__}: {steps} steps in {total:.2f} s (first step {times[0] * 1e3:.0f} ms), "
          f"median step {later[len(later) // 2] * 1e3:.2f} ms; test accuracy {100 * acc:.2f}%")
    if args.log:
        with open(args.log, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["step", "epoch", "loss", "test_accuracy", "lr", "ms"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
