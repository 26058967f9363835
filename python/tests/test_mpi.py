"""Data-parallel training over MPI (python/examples/char_lm_mpi.py under `mpirun -np 2`): two
ranks on half-batches follow one rank on the whole batch; a rank that fails or dies ends the
job with its message instead of leaving the others waiting in a collective."""

import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("mpi4py")
MPIRUN = shutil.which("mpirun")
pytestmark = pytest.mark.skipif(MPIRUN is None, reason="no mpirun (scripts/dist.sh installs Open MPI)")

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "examples" / "char_lm_mpi.py"
SMALL = ["--batch", "8", "--block", "16", "--channels", "32", "--heads", "2", "--layers", "1", "--log-every", "10"]
# Open MPI refuses root without these; CI runs as root.
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", TFN_STRICT="1")


def run(ranks, *args, timeout=240):
    cmd = [sys.executable, str(SCRIPT), *SMALL, *args]
    if ranks:
        cmd = [MPIRUN, "-np", str(ranks), "--oversubscribe", *cmd]
    return subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=timeout)


def test_two_ranks_on_half_batches_match_one_rank_on_the_batch(tmp_path):
    one = run(None, "--steps", "20", "--save", str(tmp_path / "one.npz"))
    assert one.returncode == 0, one.stderr
    two = run(2, "--steps", "20", "--save", str(tmp_path / "two.npz"))
    assert two.returncode == 0, two.stderr
    assert "2 rank(s) x 1 thread(s)" in two.stdout
    a, b = np.load(tmp_path / "one.npz"), np.load(tmp_path / "two.npz")
    assert sorted(a.files) == sorted(b.files) and len(a.files) == 17
    worst = max(float(np.abs(a[k] - b[k]).max()) for k in a.files)
    assert worst <= 1e-6, worst
    # ... and training moved them (rank 0 broadcast its initial weights, the others did not
    # start from them).
    init = run(None, "--steps", "1", "--lr", "0", "--save", str(tmp_path / "init.npz"))
    assert init.returncode == 0, init.stderr
    c = np.load(tmp_path / "init.npz")
    assert max(float(np.abs(a[k] - c[k]).max()) for k in a.files) > 1e-3


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_failing_rank_ends_the_job(how):
    out = run(2, "--steps", "50", "--fail-rank", "1", "--fail-step", "3", "--fail-how", how, timeout=120)
    assert out.returncode != 0
    if how == "raise":
        assert "rank 1 failed; aborting all ranks" in out.stderr
        assert "injected failure at step 3" in out.stderr
    else:
        assert "rank 1" in out.stderr and "signal 9" in out.stderr, out.stderr
