"""tfn functions on Dask arrays: `tfn.dask.map_blocks(fn, x, ...)`.

`dask.array.map_blocks(fn, x)` calls `fn` once per block. That gives the answer of one call
on the whole array only if `fn` is *blockwise* along every axis the chunks split: no output
element may depend on input elements of another block along that axis. Elementwise functions
are blockwise along every axis; row-wise ones (a softmax over the last axis, a row norm) along
every axis but the rows' own, so their chunks must keep that axis whole (`x.rechunk({-1: -1})`).

`map_blocks` here checks it before building the graph: for every axis the chunks split, it
calls `fn` on a random probe of the first two blocks along that axis (the first block's sizes
along the others) and on each of the two, and requires the two results to be the whole's, bit
for bit. A reduction, a softmax, a cumulative sum or a position (`iota_like`) along that axis
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


def _axes(axes, ndim):
    """`drop_axis`/`new_axis` as a sorted list of axes in `range(ndim)`."""
    axes = [axes] if isinstance(axes, int) else list(axes)
    return sorted({a % ndim for a in axes}) if ndim else []


def _axis_map(ndim_in, ndim_out, drop_axis, new_axis):
    """The dropped input axes, the new output axes and {input axis: output axis} for the
    kept ones: `drop_axis` (default: the trailing input axes the result lacks) go first, then
    `new_axis` (default: the trailing output axes the result adds), as in Dask."""
    drop = (
        _axes(drop_axis, ndim_in)
        if drop_axis is not None
        else list(range(ndim_out, ndim_in))
    )
    kept = [ax for ax in range(ndim_in) if ax not in drop]
    if new_axis is not None:
        new = _axes(new_axis, ndim_out)
    else:
        new = list(range(len(kept), ndim_out))
    outs = [o for o in range(ndim_out) if o not in new]
    if len(outs) != len(kept):
        raise ChunkError(
            f"the result has {ndim_out} axes, the argument {ndim_in}: with drop_axis={drop} "
            f"and new_axis={new} they do not pair up; pass the axes the function drops "
            "(drop_axis=) and adds (new_axis=)"
        )
    return drop, new, dict(zip(kept, outs))


def _assumed(drop_axis, new_axis, drop, new):
    """What a ChunkError adds when the axes were guessed."""
    guessed = []
    if drop_axis is None and drop:
        guessed.append(f"drops the trailing axes {drop} (drop_axis=)")
    if new_axis is None and new:
        guessed.append(f"adds the trailing axes {new} (new_axis=)")
    if not guessed:
        return ""
    return (
        " (assuming the function " + " and ".join(guessed) + "; if it drops or adds others, "
        "say which)"
    )


def check_blockwise(fn, *args, drop_axis=None, new_axis=None, **kwargs):
    """Raises `ChunkError` unless `fn` is blockwise along every axis the chunks of the dask
    arrays among `args` split; returns the result of a probe shaped like the first block, the
    dropped input axes, the new output axes, {input axis: output axis} and the split axes.
    Keyword arguments other than `drop_axis`/`new_axis` go to `fn`."""
    return _check(fn, args, kwargs, drop_axis, new_axis)


def _check(fn, args, kwargs, drop_axis, new_axis):
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

    # The first block's shape: what the function gets (and must accept) from Dask.
    def block_shape(a):
        return [a.chunks[ax][0] for ax in range(a.ndim)]

    out = _call(fn, probe(block_shape), kwargs)
    drop, new, axis_map = _axis_map(ndim, out.ndim, drop_axis, new_axis)
    assumed = _assumed(drop_axis, new_axis, drop, new)
    name = getattr(fn, "__name__", repr(fn))
    for axis in split:
        # The first two blocks along `axis` (as Dask cuts them), the first block elsewhere.
        c0, c1 = first.chunks[axis][0], first.chunks[axis][1]

        def shape_of(a):
            return [c0 + c1 if ax == axis else a.chunks[ax][0] for ax in range(a.ndim)]

        why = None
        for vary in variants:
            whole_args = probe(shape_of, vary)
            halves = []
            for lo, hi in ((0, c0), (c0, c0 + c1)):
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
                why = f"two blocks joined are not a valid argument ({e})"
                break
            try:
                parts = [_call(fn, h, kwargs) for h in halves]
                oax = axis_map.get(axis)
                grown = [o for o in new if whole.shape[o] != out.shape[o]]
                if oax is None:
                    why = "the function reduces that axis away" + assumed
                elif whole.shape[oax] != c0 + c1:
                    why = (
                        f"the result's axis {oax} has {whole.shape[oax]} elements for "
                        f"{c0 + c1} of the argument's axis {axis} (the function changes its "
                        f"size, or the result's axes are not the argument's){assumed}"
                    )
                elif grown:
                    why = f"the size of the result's new axis {grown[0]} follows that axis"
                else:
                    joined = np.concatenate(parts, axis=oax)
                    if not np.array_equal(joined, whole, equal_nan=True):
                        why = (
                            "a block's result depends on elements of other blocks along it "
                            "(a reduction, a softmax, a scan or a position along that axis)"
                        )
            except ValueError as e:  # a shape the function does not accept for a part
                why = f"a block is not a valid argument ({e})"
            if why is not None:
                break
        if why is not None:
            raise ChunkError(
                f"`{name}` is not blockwise along axis {axis} of its argument, which the chunks "
                f"{first.chunks[axis]} split: {why}. Chunking that axis would give a different "
                f"answer than one call; keep it in one chunk, e.g. x.rechunk({{{axis}: -1}})"
            )
    return out, drop, new, axis_map, split


def map_blocks(fn, *args, drop_axis=None, new_axis=None, **kwargs):
    """`dask.array.map_blocks(fn, *args, **kwargs)` for a tfn function `fn` (one result),
    after checking that `fn` is blockwise along every axis the chunks split (`ChunkError`
    otherwise). The result's dtype and chunks come from calling `fn` on the first block; a
    split axis must keep its size, the others take the result's. `drop_axis`: the input axes
    the result does not have (default: the trailing ones when it has fewer axes); `new_axis`:
    the result's axes the input does not have (default: the trailing ones when it has more),
    applied after `drop_axis` as in Dask. Keyword arguments go to `fn` (tfn attributes such as
    `dim=`)."""
    import dask.array as da

    out, drop, new, axis_map, split = _check(fn, args, kwargs, drop_axis, new_axis)
    first = next(a for a in args if _is_dask(a))
    from_input = {o: i for i, o in axis_map.items()}
    chunks = []
    for oax in range(out.ndim):
        iax = from_input.get(oax)
        if iax is not None and iax in split:
            chunks.append(first.chunks[iax])  # checked above to keep its size
        else:
            chunks.append((out.shape[oax],))
    extra = {}
    if drop:
        extra["drop_axis"] = drop
    if new:
        extra["new_axis"] = new
    meta = np.empty((0,) * out.ndim, dtype=out.dtype)
    # `fn`'s keywords bound into a partial: passed to `da.map_blocks` they could be taken for
    # its own (`token=`, `name=`, `dtype=`, `chunks=`, ...).
    call = functools.partial(fn, **kwargs) if kwargs else fn
    return da.map_blocks(call, *args, dtype=out.dtype, chunks=tuple(chunks), meta=meta, **extra)
