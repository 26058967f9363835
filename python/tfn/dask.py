"""tfn functions on Dask arrays: `tfn.dask.map_blocks(fn, x, ...)`.

`dask.array.map_blocks(fn, x)` calls `fn` once per block. That gives the answer of one call
on the whole array only if `fn` is *blockwise* along every axis the chunks split: no output
element may depend on input elements of another block along that axis. Elementwise functions
are blockwise along every axis; row-wise ones (a softmax over the last axis, a row norm) along
every axis but the rows' own, so their chunks must keep that axis whole (`x.rechunk({-1: -1})`).

`map_blocks` here checks it before building the graph: for every axis the chunks split, it
calls `fn` on a small random probe (5 along that axis, the first block's sizes along the
others) and on its two halves, and requires the halves' results to be the whole's, bit for
bit. A reduction, a softmax, a cumulative sum or a position (`iota_like`) along that axis
fails the check, and the call raises `ChunkError` naming the axis and the rechunk that fixes
it, instead of returning a wrong answer. The probes reuse the signature's compiled code (tfn
compiles per dtype and rank, not per size). The function itself travels to the workers by
pickling (see `tfn._pickle`), compiled once per worker process.
"""

import functools

import numpy as np

__all__ = ["ChunkError", "map_blocks", "check_blockwise"]


class ChunkError(ValueError):
    """The chunks split an axis the function is not blockwise along."""


def _is_dask(a):
    try:
        import dask.array as da
    except ImportError:  # pragma: no cover - dask is an optional dependency
        return False
    return isinstance(a, da.Array)


def _probe_value(a, shape, rng, vary=False):
    """A probe of `shape` for the dask array `a`: random normals for floats; for other
    dtypes (indices, masks) the array's own leading elements, which are valid values, or
    (`vary`) random values between their least and greatest (random bools for a mask), so
    that leading elements that happen to be equal (a left-padded mask) do not hide a scan."""
    if np.issubdtype(a.dtype, np.floating):
        return rng.standard_normal(shape).astype(a.dtype)
    corner = tuple(slice(0, n) for n in shape)
    v = np.asarray(a[corner].compute())
    if v.shape != tuple(shape):
        v = np.resize(v, shape) if v.size else np.zeros(shape, a.dtype)
    if vary:
        if a.dtype == np.bool_:
            return rng.random(shape) < 0.5
        lo, hi = (int(v.min()), int(v.max())) if v.size else (0, 1)
        hi = max(hi, lo + 1)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(a.dtype)
    return v


def _call(fn, args, kwargs):
    out = fn(*args, **kwargs)
    if isinstance(out, tuple):
        raise TypeError(
            f"tfn.dask.map_blocks: `{getattr(fn, '__name__', fn)}` returns {len(out)} results; "
            "dask.array.map_blocks takes functions of one result"
        )
    return np.asarray(out)


def _out_axis(axis, ndim_in, ndim_out, drop_axis):
    """The output axis an input axis becomes (None if the function drops it)."""
    if ndim_out == ndim_in:
        return axis
    dropped = sorted(a % ndim_in for a in drop_axis)
    if axis in dropped:
        return None
    return axis - sum(1 for d in dropped if d < axis)


def _default_drop(ndim_in, ndim_out, drop_axis):
    if drop_axis is not None:
        return [drop_axis] if isinstance(drop_axis, int) else list(drop_axis)
    return list(range(ndim_out, ndim_in))


def check_blockwise(fn, *args, drop_axis=None, **kwargs):
    """Raises `ChunkError` unless `fn` is blockwise along every axis the chunks of the dask
    arrays among `args` split; returns the result of a probe shaped like the first block (5
    along the split axes), the dropped axes, the probe's shape and the split axes. Keyword
    arguments other than `drop_axis` go to `fn`."""
    return _check(fn, args, kwargs, drop_axis)


def _check(fn, args, kwargs, drop_axis):
    """`check_blockwise` with `fn`'s keyword arguments as a dict (so that none is taken for
    one of this module's or Dask's own)."""
    rng = np.random.default_rng(0)
    darrs = [a for a in args if _is_dask(a)]
    if not darrs:
        raise TypeError("tfn.dask.map_blocks: no dask array among the arguments")
    first = darrs[0]
    ndim = first.ndim
    if any(a.ndim != ndim for a in darrs):
        raise TypeError(
            "tfn.dask.map_blocks: the dask arrays must have the same number of axes (pass "
            "lower-rank operands, such as weights, as NumPy arrays: every block gets them whole)"
        )
    block = [c[0] for c in first.chunks]
    split = [ax for ax in range(ndim) if len(first.chunks[ax]) > 1]

    def probe(shape_of, vary=False):
        return [
            _probe_value(a, shape_of(a), rng, vary) if _is_dask(a) else a for a in args
        ]

    # Integer and bool arguments are probed twice: with their own leading values, and with
    # varied ones (skipped when the function refuses them: indices out of range).
    variants = (False, True) if any(
        not np.issubdtype(a.dtype, np.floating) for a in darrs
    ) else (False,)

    # How the output's shape follows the input's: the first block's shape, but 5 along the
    # split axes (checked below to map blockwise), so the probe stays small.
    def base_shape(a):
        return [5 if ax in split else a.chunks[ax][0] for ax in range(a.ndim)]

    out = _call(fn, probe(base_shape), kwargs)
    drop = _default_drop(ndim, out.ndim, drop_axis)
    name = getattr(fn, "__name__", repr(fn))
    for axis in split:
        # 5 along `axis` (split into 2 + 3), 2 along the other split axes, whole elsewhere.
        def shape_of(a, n=5):
            return [
                (n if ax == axis else 2 if ax in split else a.chunks[ax][0])
                if ax < a.ndim
                else 1
                for ax in range(a.ndim)
            ]

        why = None
        for vary in variants:
            whole_args = probe(shape_of, vary)
            halves = []
            for lo, hi in ((0, 2), (2, 5)):
                part = []
                for a, v in zip(args, whole_args):
                    if _is_dask(a) and a.ndim == ndim:
                        idx = tuple(
                            slice(lo, hi) if ax == axis else slice(None) for ax in range(ndim)
                        )
                        part.append(v[idx])
                    else:
                        part.append(v)
                halves.append(part)
            try:
                whole = _call(fn, whole_args, kwargs)
            except ValueError as e:
                if vary:
                    continue  # varied values the function refuses: the first probe stands
                why = f"a part of a block is not a valid argument ({e})"
                break
            try:
                parts = [_call(fn, h, kwargs) for h in halves]
                oax = _out_axis(axis, ndim, whole.ndim, drop)
                if oax is None:
                    why = "the function reduces that axis away"
                elif whole.shape[oax] != 5:
                    why = f"the result's axis {oax} is not the argument's axis {axis}"
                else:
                    joined = np.concatenate(parts, axis=oax)
                    if not np.array_equal(joined, whole, equal_nan=True):
                        why = (
                            "a block's result depends on elements of other blocks along it "
                            "(a reduction, a softmax, a scan or a position along that axis)"
                        )
            except ValueError as e:  # a shape the function does not accept for a part
                why = f"a part of a block is not a valid argument ({e})"
            if why is not None:
                break
        if why is not None:
            raise ChunkError(
                f"`{name}` is not blockwise along axis {axis} of its argument, which the chunks "
                f"{first.chunks[axis]} split: {why}. Chunking that axis would give a different "
                f"answer than one call; keep it in one chunk, e.g. x.rechunk({{{axis}: -1}})"
            )
    block = [5 if ax in split else b for ax, b in enumerate(block)]
    return out, drop, block, split


def map_blocks(fn, *args, drop_axis=None, **kwargs):
    """`dask.array.map_blocks(fn, *args, **kwargs)` for a tfn function `fn` (one result),
    after checking that `fn` is blockwise along every axis the chunks split (`ChunkError`
    otherwise). The result's dtype and chunks come from calling `fn` on a probe of the
    first block's shape; an output axis whose size differs from the input's must be one
    chunk. `drop_axis`: the input axes the result does not have (default: the trailing ones
    when the result has fewer axes). Keyword arguments go to `fn` (tfn attributes such as
    `dim=`)."""
    import dask.array as da

    out, drop, block, split = _check(fn, args, kwargs, drop_axis)
    first = next(a for a in args if _is_dask(a))
    ndim = first.ndim
    kept = [ax for ax in range(ndim) if ax not in [d % ndim for d in drop]]
    chunks = []
    for oax, iax in enumerate(kept):
        if iax in split or out.shape[oax] == block[iax]:
            chunks.append(first.chunks[iax])
        elif len(first.chunks[iax]) == 1:
            chunks.append((out.shape[oax],))
        else:
            raise ChunkError(
                f"the result's axis {oax} has {out.shape[oax]} elements for {block[iax]} of the "
                f"argument's axis {iax}, which the chunks split: keep it in one chunk"
            )
    extra = {}
    if len(kept) != ndim:
        extra["drop_axis"] = [d % ndim for d in drop]
    meta = np.empty((0,) * out.ndim, dtype=out.dtype)
    # `fn`'s keywords bound into a partial: passed to `da.map_blocks` they could be taken for
    # its own (`token=`, `name=`, `dtype=`, `chunks=`, ...).
    call = functools.partial(fn, **kwargs) if kwargs else fn
    return da.map_blocks(call, *args, dtype=out.dtype, chunks=tuple(chunks), meta=meta, **extra)
