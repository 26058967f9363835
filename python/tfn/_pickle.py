"""How tfn objects travel between processes (pickle, Dask, multiprocessing, MPI).

A `tfn.Library` (and a `tfn.Function` taken from it, and a `tfn.Session`) pickles as the
arguments of its session and the sources of every load of that session up to its own:
never as machine code. Unpickling a library or function looks the pair up in a per-process
cache first, so a process makes one session per (arguments, sources), however many times
the library arrives (every Dask task unpickles its function), and that session compiles
each call signature once. An unpickled `Session` is a fresh one with the same loads (the
receiver may load more into it). A session made without `threads` uses the receiving process's default
(`TFN_THREADS`, else every core), so a pickle made on a 64-core client runs with the
worker's own thread count.
"""

import hashlib
import threading

_lock = threading.Lock()
# key -> (session, library of the last load)
_sessions = {}


def _key(made, loads):
    h = hashlib.sha256(repr(tuple(made)).encode())
    for main, files in loads:
        h.update(b"\0load\0" + main.encode())
        for name, text in files:
            h.update(b"\0file\0" + name.encode() + b"\0" + text.encode())
    return h.hexdigest()


def _make(made, loads):
    from tfn._tfn import Session

    backend, threads, strict, optimize = made
    session = Session(backend, threads, strict=strict, optimize=optimize)
    library = None
    for main, files in loads:
        library = session.load_sources(main, files)
    return session, library


def _restore(made, loads):
    key = _key(made, loads)
    with _lock:
        hit = _sessions.get(key)
        if hit is None:
            hit = _sessions[key] = _make(made, loads)
    return hit


def restore_session(made, loads):
    # A session is a container the receiver may load more into: a fresh one each time, not
    # the cached session that libraries and functions share.
    return _make(made, loads)[0]


def restore_library(made, loads):
    return _restore(made, loads)[1]


def restore_function(made, loads, name):
    return _restore(made, loads)[1].function(name)


def cached_sessions():
    """How many sessions unpickling has made in this process (for tests)."""
    with _lock:
        return len(_sessions)
