"""tfn: compile functions of a small tensor language into fused, vectorised CPU kernels.

    import numpy as np, tfn
    lib = tfn.load("nn.tfn")          # or tfn.loads(source, name="inline.tfn")
    y = lib.gelu(x)                   # NumPy in, NumPy out
    y = lib.softmax(x, dim=0)         # arguments parsed against the .tfn signatures
    lib.gelu(x, out=y)                # into a preallocated array
    dx, dw, db = lib.vjp("linear", (x, w, b), cotangent)
    s = tfn.Session(backend="interp", threads=1); lib = s.load("nn.tfn"); s.stats()
    y = lib.layer(x, weights=tfn.weights("model.safetensors", {"w": "lin.weight:T"}))

See docs/python.md in the repository.
"""

from tfn._tfn import (
    CallError,
    CompileError,
    DispatchError,
    DTypeError,
    Error,
    Function,
    CheckpointError,
    InternalError,
    Library,
    RunError,
    Session,
    ShapeError,
    Stats,
    TfnWarning,
    UnknownFunctionError,
    Weights,
    __version__,
    default_session,
    load,
    loads,
    save_safetensors,
    weights,
)

__all__ = [
    "CallError",
    "CompileError",
    "DispatchError",
    "DTypeError",
    "Error",
    "Function",
    "CheckpointError",
    "InternalError",
    "Library",
    "RunError",
    "Session",
    "ShapeError",
    "Stats",
    "TfnWarning",
    "UnknownFunctionError",
    "Weights",
    "__version__",
    "default_session",
    "load",
    "loads",
    "save_safetensors",
    "weights",
]
