"""`rand_like`, `randn_like` and `std:nn`'s `dropout`: file cases whose expected values come from
an independent NumPy Philox-4x32-10 (checked against Random123's known answers below) and the
documented word-to-float transforms (docs/language.md, `ir/src/random.rs`).

Used by `gen_run_cases.py` (`random_run`) and `gen_grad_cases.py` (`dropout_grads`).
"""

import numpy as np

from casegen import DT, Case, rng, uniform

MASK = np.uint64(0xFFFFFFFF)
M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
W0, W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)


def philox(c0, c1, c2, c3, k0, k1):
    """Philox-4x32-10 on uint64 arrays holding 32-bit words (Random123's philox4x32_R)."""
    c = [np.asarray(x, dtype=np.uint64) for x in (c0, c1, c2, c3)]
    k0, k1 = np.uint64(k0), np.uint64(k1)
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & MASK, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & MASK]
    return c


KAT = [  # Random123 kat_vectors: counter, key, expected
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
]
for _ctr, _key, _want in KAT:
    assert [int(w) for w in philox(*_ctr, *_key)] == _want


def words(key, n):
    """The four words of flat indices 0..n under a key tensor's values ([] → [k, 0])."""
    k = [int(v) & 0xFFFFFFFFFFFFFFFF for v in np.asarray(key, dtype=np.int64).reshape(-1)] + [0]
    k0, k1 = k[0], k[1]
    i = np.arange(n, dtype=np.uint64)
    return philox(i & MASK, i >> np.uint64(32), np.full(n, k1 & 0xFFFFFFFF, np.uint64),
                  np.full(n, k1 >> 32, np.uint64), k0 & 0xFFFFFFFF, k0 >> 32)


def uniform_of(key, shape, dtype):
    w = words(key, int(np.prod(shape, dtype=np.int64)))
    if dtype == np.float32:
        u = (w[0] >> np.uint64(8)).astype(np.float64) * 2.0 ** -24
    else:
        u = ((w[0] >> np.uint64(5)).astype(np.float64) * 2.0 ** 26
             + (w[1] >> np.uint64(6)).astype(np.float64)) * 2.0 ** -53
    return u.astype(dtype).reshape(shape)


def normal_of(key, shape, dtype):
    """Box-Muller's cosine branch in float64 (tfn evaluates its own log/cos polynomials in the
    dtype: equal within a few ULP)."""
    w = words(key, int(np.prod(shape, dtype=np.int64)))
    if dtype == np.float32:
        u = ((w[0] >> np.uint64(8)).astype(np.float64) + 1.0) * 2.0 ** -24
        t = (w[1] >> np.uint64(8)).astype(np.float64) * 2.0 ** -24
    else:
        u = ((w[0] >> np.uint64(5)).astype(np.float64) * 2.0 ** 26
             + (w[1] >> np.uint64(6)).astype(np.float64) + 1.0) * 2.0 ** -53
        t = w[2].astype(np.float64) * 2.0 ** -32
    z = np.sqrt(-2.0 * np.log(u)) * np.cos(2.0 * np.pi * t)
    return z.astype(dtype).reshape(shape)


def key_array(values):
    a = np.asarray(values, dtype=np.int64)
    return a.reshape(()) if a.size == 1 else a


def random_run():
    c = Case("run", "random", "rand_like and randn_like (spec section 7) against an independent NumPy\n"
             "Philox-4x32-10: f32 and f64, keys of shape [] and [2] (negative and 64-bit values),\n"
             "vector bodies and scalar tails, size 0, a fused consumer, dropout (std:nn).", """
use "std:nn"

fn uniform(Tensor x, Tensor key) -> Tensor {
    return rand_like(x, key)
}

fn uniform64(Tensor x, Tensor key) -> Tensor {
    return rand_like(x, key, dtype=f64)
}

fn normal(Tensor x, Tensor key) -> Tensor {
    return randn_like(x, key)
}

fn normal64(Tensor x, Tensor key) -> Tensor {
    return randn_like(x, key, dtype=f64)
}

fn noisy(Tensor x, Tensor key) -> Tensor {
    return x + 0.5 * randn_like(x, key, dtype=f64)
}

fn drop(Tensor x, Tensor key, *, Float p) -> Tensor {
    return dropout(x, key, p=p)
}
""")
    keys = [[0], [-7], [0x0123456789ABCDEF], [3, 1], [-1, -2], [42, 2 ** 40 + 5]]
    for n, key in enumerate(keys):
        k = key_array(key)
        shape = [(7, 9), (33,), (2, 3, 5), (0, 4), (), (1, 1)][n]
        x = np.zeros(shape, np.float32)
        c.run("uniform", f"uniform_{n}", {"x": x, "key": k}, [uniform_of(k, shape, np.float32)])
        c.run("uniform64", f"uniform64_{n}", {"x": x, "key": k}, [uniform_of(k, shape, np.float64)])
        c.run("normal", f"normal_{n}", {"x": x, "key": k}, [normal_of(k, shape, np.float32)])
        c.run("normal64", f"normal64_{n}", {"x": x, "key": k}, [normal_of(k, shape, np.float64)])
    r = rng(31)
    x = uniform(r, [6, 11], -2, 2, np.float64)
    k = key_array([5, 6])
    c.run("noisy", "noisy", {"x": x, "key": k}, [x + 0.5 * normal_of(k, x.shape, np.float64)])
    for dt, name in [(np.float32, "f32"), (np.float64, "f64")]:
        x = uniform(r, [9, 13], -2, 2, dt)
        for p in [0.0, 0.3, 1.0]:
            keep = uniform_of(k, x.shape, dt) >= dt(p)
            out = np.where(keep, x * dt(1.0 / (1.0 - p)) if p < 1 else 0, 0).astype(dt)
            c.run("drop", f"drop_{name}_{p}", {"x": x, "key": k, "p": p}, [out])
    return c


def dropout_grads():
    c = Case("grad", "dropout_grads", "dropout's gradient flows through the mask (a NumPy Philox with a\n"
             "fixed key), scaled by 1/(1-p); rand_like is constant in its shape operand.", """
use "std:nn"

fn drop(Tensor x, Tensor key) -> Tensor {
    return dropout(x * x, key, p=0.25)
}

fn noise(Tensor x, Tensor key) -> Tensor {
    return x * rand_like(x, key, dtype=f64)
}
""")
    r = rng(32)
    k = key_array([11, 4])
    x = uniform(r, [5, 7], -2, 2, np.float64)
    ct = uniform(r, [5, 7], -1, 1, np.float64)
    keep = uniform_of(k, x.shape, np.float64) >= 0.25
    c.vjp("drop", "drop", {"x": x, "key": k}, [ct], [np.where(keep, 2 * x * ct / 0.75, 0.0)])
    c.vjp("noise", "noise", {"x": x, "key": k}, [ct], [ct * uniform_of(k, x.shape, np.float64)])
    return c
