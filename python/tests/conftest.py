"""Fixtures of the tfn Python suite: the test library loaded into a JIT and an interpreter
session (every numeric test runs on both; the interpreter is tfn's reference)."""

import pathlib

import numpy as np
import pytest

import tfn

DATA = pathlib.Path(__file__).parent / "data"
OPS = DATA / "ops.tfn"


@pytest.fixture(scope="session", params=["jit", "interp"])
def session(request):
    return tfn.Session(backend=request.param, threads=2)


@pytest.fixture(scope="session")
def lib(session):
    return session.load(OPS)


@pytest.fixture(scope="session")
def jit_lib():
    return tfn.Session(backend="jit", threads=2).load(OPS)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def erf(x):
    """erf without scipy (Abramowitz-Stegun is not precise enough: use math.erf)."""
    import math

    return np.vectorize(math.erf, otypes=[np.float64])(x)


def gelu_ref(x):
    x64 = x.astype(np.float64)
    return (0.5 * x64 * (1.0 + erf(x64 / np.sqrt(2.0)))).astype(x.dtype)


def softmax_ref(x, dim=-1):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=dim, keepdims=True))
    return (e / e.sum(axis=dim, keepdims=True)).astype(x.dtype)


def layernorm_ref(x, g, b, eps=1e-5):
    x64 = x.astype(np.float64)
    mu = x64.mean(-1, keepdims=True)
    var = ((x64 - mu) ** 2).mean(-1, keepdims=True)
    return ((x64 - mu) / np.sqrt(var + eps) * g + b).astype(x.dtype)


def tol(dtype):
    return {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
