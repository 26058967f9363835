#!/usr/bin/env python3
"""The character-level GPT of examples/char_lm in jax: the same model, loss, AdamW update,
learning-rate schedule and batch sampler, to compare loss curves and step times with tfn's.

    bash benches/peers/setup.sh
    # the same initial weights and batches as tfn, no dropout (masks differ between frameworks):
    cargo run --release --example char_lm -- --steps 300 --dropout 0 --save-init /tmp/w --log tfn.csv
    benches/peers/.venv/bin/python benches/peers/char_lm_jax.py --steps 300 --dropout 0 --init /tmp/w --log jax.csv
    # step time: first step (trace + XLA compile) and the median of later steps, 1 thread:
    taskset -c 0 benches/peers/.venv/bin/python benches/peers/char_lm_jax.py --bench 50

The blocks' weights are stacked ([layers, ...], one array per name, as tfn's model.tfn takes
them) and the blocks are one jax.lax.scan over them, as tfn's model is one loop.

The sampler is examples/char_lm/corpus.rs's: SplitMix64 seeded with --seed, each sequence
starting at next() % (n - T - 1) of the training split (the first 90% of the text's symbols,
the alphabet being the text's distinct characters, sorted).
"""
import argparse
import csv
import math
import os
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TEXT = os.path.join(HERE, "..", "..", "examples", "char_lm", "data", "shakespeare.txt")
MASK = (1 << 64) - 1
BLOCK_NAMES = ["ln1_g", "ln1_b", "wq", "wk", "wv", "wo", "bo", "ln2_g", "ln2_b", "w1", "b1", "w2", "b2"]


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)


def batch(tokens, b, t, rng):
    span = len(tokens) - t - 1
    starts = [rng.next() % span for _ in range(b)]
    x = np.stack([tokens[s:s + t] for s in starts])
    y = np.stack([tokens[s + 1:s + t + 1] for s in starts])
    return x, y


def names():
    return ["wte", "wpe"] + BLOCK_NAMES + ["lnf_g", "lnf_b"]


def layout(v, t, c, layers):
    std, residual = 0.02, 0.02 / math.sqrt(2.0 * layers)
    shapes = {"wte": ([v, c], std), "wpe": ([t, c], std), "lnf_g": ([c], "ones"), "lnf_b": ([c], 0)}
    per = {"ln1_g": ([c], "ones"), "ln1_b": ([c], 0), "wq": ([c, c], std), "wk": ([c, c], std),
           "wv": ([c, c], std), "wo": ([c, c], residual), "bo": ([c], 0), "ln2_g": ([c], "ones"),
           "ln2_b": ([c], 0), "w1": ([c, 4 * c], std), "b1": ([4 * c], 0),
           "w2": ([4 * c, c], residual), "b2": ([c], 0)}
    for n, (shape, init) in per.items():
        shapes[n] = ([layers] + shape, init)
    return [(n,) + shapes[n] for n in names()]


def gelu(x):
    return 0.5 * x * (1.0 + jnp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def layer_norm(x, g, b, eps=1e-5):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    var = jnp.mean(xc * xc, axis=-1, keepdims=True)
    return xc * jax.lax.rsqrt(var + eps) * g + b


def dropout(x, key, p):
    if p == 0.0:
        return x
    keep = jax.random.uniform(key, x.shape) >= p
    return jnp.where(keep, x / (1.0 - p), 0.0)


def attention(x, wq, wk, wv, wo, bo, heads):
    b, t, c = x.shape
    hd = c // heads
    q = (x @ wq).reshape(b, t, heads, hd).transpose(0, 2, 1, 3)
    k = (x @ wk).reshape(b, t, heads, hd).transpose(0, 2, 3, 1)
    v = (x @ wv).reshape(b, t, heads, hd).transpose(0, 2, 1, 3)
    scores = (q @ k) * (1.0 / math.sqrt(hd))
    visible = jnp.arange(t)[None, :] <= jnp.arange(t)[:, None]
    p = jax.nn.softmax(jnp.where(visible, scores, -jnp.inf), axis=-1)
    y = (p @ v).transpose(0, 2, 1, 3).reshape(b, t, c)
    return y @ wo + bo


def block(x, key, w, heads, p):
    k1, k2 = jax.random.split(key)
    a = attention(layer_norm(x, w["ln1_g"], w["ln1_b"]), w["wq"], w["wk"], w["wv"], w["wo"], w["bo"], heads)
    x1 = x + dropout(a, k1, p)
    m = gelu(layer_norm(x1, w["ln2_g"], w["ln2_b"]) @ w["w1"] + w["b1"]) @ w["w2"] + w["b2"]
    return x1 + dropout(m, k2, p)


def loss_fn(params, tokens, targets, key, heads, p):
    t = tokens.shape[1]
    blocks = {n: params[n] for n in BLOCK_NAMES}
    k0, kb = jax.random.split(key)
    keys = jax.random.split(kb, params["wq"].shape[0])  # one key per block
    x = params["wte"][tokens] + params["wpe"][jnp.arange(t)]
    x = dropout(x, k0, p)

    def trip(x, w_and_key):  # one block: w is row l of every stacked weight
        w, k = w_and_key
        return block(x, k, w, heads, p), None

    x, _ = jax.lax.scan(trip, x, (blocks, keys))
    logits = layer_norm(x, params["lnf_g"], params["lnf_b"]) @ params["wte"].T
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))


def make_step(heads, p, decays, beta1=0.9, beta2=0.99, eps=1e-8):
    def step(params, moments, tokens, targets, key, lr, bc1, bc2):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets, key, heads, p)
        new_p, new_m = {}, {}
        for n, w in params.items():
            g = grads[n]
            m, v = moments[n]
            m1 = beta1 * m + (1.0 - beta1) * g
            v1 = beta2 * v + (1.0 - beta2) * g * g
            upd = (m1 / bc1) / (jnp.sqrt(v1 / bc2) + eps)
            new_p[n] = w - lr * (upd + decays[n] * w)
            new_m[n] = (m1, v1)
        return loss, new_p, new_m
    return jax.jit(step)


def schedule(args, step):
    if step <= args.warmup:
        return args.lr * step / args.warmup
    progress = min(1.0, (step - args.warmup) / max(1, args.steps - args.warmup))
    return args.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--channels", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--init", help="read DIR/NAME.npy (as written by char_lm --save-init)")
    ap.add_argument("--log", help="write step,loss,lr,ms CSV")
    ap.add_argument("--bench", type=int, metavar="N", help="time the first step and N more, then stop")
    ap.add_argument("--text", default=TEXT)
    args = ap.parse_args()

    text = open(args.text, encoding="utf-8").read()
    alphabet = sorted(set(text))
    index = {ch: i for i, ch in enumerate(alphabet)}
    ids = np.array([index[ch] for ch in text], dtype=np.int64)
    train = ids[: len(ids) * 9 // 10]

    lay = layout(len(alphabet), args.block, args.channels, args.layers)
    key = jax.random.PRNGKey(args.seed)
    params = {}
    for i, (n, shape, init) in enumerate(lay):
        if args.init:
            params[n] = jnp.asarray(np.load(os.path.join(args.init, f"{n}.npy")))
            assert list(params[n].shape) == shape, (n, params[n].shape, shape)
        elif init == "ones":
            params[n] = jnp.ones(shape, jnp.float32)
        elif init == 0:
            params[n] = jnp.zeros(shape, jnp.float32)
        else:
            params[n] = init * jax.random.normal(jax.random.fold_in(key, 1000 + i), shape, jnp.float32)
    decays = {n: (args.weight_decay if len(s) == 3 else 0.0) for n, s, _ in lay}
    moments = {n: (jnp.zeros_like(w), jnp.zeros_like(w)) for n, w in params.items()}
    step_fn = make_step(args.heads, args.dropout, decays)

    rng = SplitMix64(args.seed)
    steps = args.bench + 1 if args.bench else args.steps
    rows, times = [], []
    for step in range(1, steps + 1):
        x, y = batch(train, args.batch, args.block, rng)
        lr = schedule(args, step)
        bc1, bc2 = 1.0 - 0.9 ** step, 1.0 - 0.99 ** step
        t0 = time.perf_counter()
        loss, params, moments = step_fn(params, moments, x, y, jax.random.fold_in(key, step),
                                        jnp.float32(lr), jnp.float32(bc1), jnp.float32(bc2))
        loss = float(jax.block_until_ready(loss))
        ms = (time.perf_counter() - t0) * 1e3
        times.append(ms)
        rows.append((step, loss, lr, ms))
        if not args.bench and (step % 100 == 0 or step == steps):
            print(f"step {step}/{steps} loss {loss:.4f} {ms:.1f} ms", file=sys.stderr)
    if args.log:
        tmp = args.log + ".partial"
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["step", "loss", "lr", "ms"])
            w.writerows(rows)
        os.replace(tmp, args.log)
    later = sorted(times[1:]) or [float("nan")]
    print(f"jax {jax.__version__}: first step {times[0]:.0f} ms, median step {later[len(later) // 2]:.2f} ms "
          f"over {len(later)} steps, {args.batch * args.block / (later[len(later) // 2] / 1e3):.0f} tokens/s, "
          f"final loss {rows[-1][1]:.4f}")


if __name__ == "__main__":
    main()
