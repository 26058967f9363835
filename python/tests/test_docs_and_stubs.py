"""Docstrings from signatures (help()) and .pyi stubs (python -m tfn.stubs); and the Python in
the documentation, run as written: every ```python block of README.md and docs/*.md (not
```python no-run) from the repository root, and every ```sh python block with this venv's
`python` first on PATH (the other blocks run in tests/cli/docs.rs, which documents the
markers)."""

import ast
import os
import pathlib
import pydoc
import subprocess
import sys

import numpy as np
import pytest

import tfn
from conftest import OPS


def test_help_shows_signature_and_doc_comment(lib):
    text = pydoc.render_doc(lib.scale, renderer=pydoc.plaintext)
    assert "scale(Tensor x, Tensor s) -> Tensor" in text
    assert "scale.scalar(Tensor x, Scalar s) -> Tensor" in text
    assert "Scales a tensor by another tensor.\n" in lib.scale.__doc__
    assert "Broadcasting applies." in lib.scale.__doc__
    assert "softmax(Tensor x, *, Int dim = -1) -> Tensor" in lib.softmax.__doc__
    assert "split_stats(Tensor x) -> (Tensor, Tensor, Tensor)" in lib.split_stats.__doc__
    assert "add_scalar<T: {f32, f64}>(Tensor<T> x, Scalar alpha = 1) -> Tensor<T>" in lib.add_scalar.__doc__
    assert lib.softmax.__name__ == "softmax"
    assert lib["scale.scalar"].__doc__.startswith("scale.scalar(Tensor x, Scalar s)")


def _defs(tree, cls=None):
    nodes = tree.body
    if cls:
        nodes = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    return [n for n in nodes if isinstance(n, ast.FunctionDef)]


def test_stub_is_valid_python_with_every_function(lib):
    text = lib.stub()
    tree = ast.parse(text)
    methods = _defs(tree, "Library")
    names = [m.name for m in methods]
    for f in lib.functions:
        assert f in names
    assert names.count("scale") == 2  # one @overload per .tfn overload
    softmax = next(m for m in methods if m.name == "softmax")
    assert [a.arg for a in softmax.args.args] == ["self", "x"]
    assert [a.arg for a in softmax.args.kwonlyargs] == ["dim", "out", "weights"]
    assert "np.float32" in ast.unparse(next(m for m in methods if m.name == "only_f32"))
    assert "tuple[" in ast.unparse(next(m for m in methods if m.name == "split_stats").returns)
    assert "load" in [d.name for d in _defs(tree)]


def test_stubs_command_line(tmp_path):
    run = subprocess.run([sys.executable, "-m", "tfn.stubs", str(OPS)], capture_output=True,
                         text=True, check=True)
    ast.parse(run.stdout)
    subprocess.run([sys.executable, "-m", "tfn.stubs", str(OPS), "--module", "-o", str(tmp_path)],
                   check=True)
    assert (tmp_path / "ops.pyi").exists() and (tmp_path / "ops.tfn").exists()
    code = "import ops, numpy as np; print(float(ops.add_scalar(np.ones(1, np.float32), 2)[0]))"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "3.0"
    bad = tmp_path / "bad.tfn"
    bad.write_text("fn f(Tensor x) -> Tensor { return q }\n")
    fail = subprocess.run([sys.executable, "-m", "tfn.stubs", str(bad)], capture_output=True,
                          text=True)
    assert fail.returncode == 1 and "bad.tfn:1:" in fail.stderr
    # -o names a directory: a file name there is refused, not made a directory.
    named = tmp_path / "out" / "ops.pyi"
    fail = subprocess.run([sys.executable, "-m", "tfn.stubs", str(OPS), "-o", str(named)],
                          capture_output=True, text=True)
    assert fail.returncode == 1 and "takes a directory" in fail.stderr and not named.exists()


HOSTILE_NAMES = """
fn relu(Tensor x) -> Tensor { return maximum(x, 0.0) }
fn odd(Tensor self, Tensor out, Tensor lambda, *, Float weights = 1.0, Float is = 2.0, Float ok = 3.0) -> Tensor {
    return (self + out + lambda) * weights * is * ok
}
fn vjp(Tensor x) -> Tensor { return x + 1.0 }
fn load(Tensor x) -> Tensor { return x + 2.0 }
fn half_b(Tensor<bf16> x) -> Tensor<bf16> { return x }
fn uses(Tensor x) -> Tensor { return helper(x) }
"""


def test_stubs_of_names_python_cannot_write(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "h.tfn").write_text("fn helper(Tensor x) -> Tensor { return x * 3.0 }\n")
    for name in ("m1", "m2"):
        (tmp_path / f"{name}.tfn").write_text('use "sub/h.tfn"\n' + HOSTILE_NAMES)
    lib = tfn.Session(threads=1).load(tmp_path / "m1.tfn")
    assert lib.sources == [str(tmp_path / "m1.tfn"), str(tmp_path / "sub" / "h.tfn")]
    tree = ast.parse(lib.stub())
    methods = {m.name: m for m in _defs(tree, "Library")}
    # Every function but `vjp` (a Library method: lib["vjp"]) is a method, bf16 typed as Any.
    assert set(methods) == {"relu", "odd", "load", "half_b", "uses", "helper"}
    assert "Any" in ast.unparse(methods["half_b"].returns)
    odd = methods["odd"].args
    assert [a.arg for a in odd.posonlyargs] == ["self", "self_", "out_", "lambda_"]
    assert [a.arg for a in odd.kwonlyargs] == ["ok", "out", "weights"] and odd.kwarg.arg == "kwargs"
    module = {d.name for d in _defs(tree)}
    assert "vjp" in module and "odd" in module and [d.name for d in _defs(tree)].count("load") == 1
    out = tmp_path / "pkg"
    for name in ("m1", "m2"):
        subprocess.run([sys.executable, "-m", "tfn.stubs", str(tmp_path / f"{name}.tfn"), "--module",
                        "-o", str(out)], check=True)
    assert (out / "sub" / "h.tfn").exists()
    # Two generated modules defining the same names load side by side (a session each).
    code = ("import m1, m2, numpy as np; x = np.ones(2, np.float32); "
            "print(m1.relu(x)[0], m2.uses(x)[0], m1.vjp(x)[0], m1.odd(x, x, x, **{'is': 1.0})[0])")
    run = subprocess.run([sys.executable, "-c", code], cwd=out, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["1.0", "3.0", "2.0", "9.0"]
    # -o naming a file is an error message, not a traceback.
    (tmp_path / "afile").write_text("")
    fail = subprocess.run([sys.executable, "-m", "tfn.stubs", str(tmp_path / "m1.tfn"), "-o",
                           str(tmp_path / "afile")], capture_output=True, text=True)
    assert fail.returncode == 1 and "is not a directory" in fail.stderr and "Traceback" not in fail.stderr
    # A module `import` cannot load is written, with a warning saying why.
    (tmp_path / "my-nn.tfn").write_text((tmp_path / "m1.tfn").read_text())
    warned = subprocess.run([sys.executable, "-m", "tfn.stubs", str(tmp_path / "my-nn.tfn"), "--module",
                             "-o", str(out)], capture_output=True, text=True)
    assert warned.returncode == 0 and "not a Python identifier" in warned.stderr, warned.stderr
    assert (out / "my-nn.py").exists()


def test_module_stub_covers_the_api():
    import pathlib

    pyi = pathlib.Path(tfn.__file__).with_name("__init__.pyi")
    tree = ast.parse(pyi.read_text())
    names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    for name in tfn.__all__:
        if name != "__version__":
            assert name in names, name


def test_results_usable_by_numpy(lib):
    assert np.asarray(lib.gelu(np.ones(2))).sum() > 0


REPO = pathlib.Path(__file__).resolve().parents[2]


def _doc_blocks():
    """(place, language, attributes, text) of every fenced block of README.md and docs/*.md."""
    out = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        block = None
        for number, line in enumerate(path.read_text().splitlines(), 1):
            stripped = line.strip()
            if block is None and stripped.startswith("```"):
                words = stripped[3:].split()
                place = f"{path.relative_to(REPO)}:{number}"
                block = (place, words[0] if words else "", words[1:], [], len(line) - len(line.lstrip()))
            elif block is not None and stripped == "```":
                out.append((block[0], block[1], block[2], "\n".join(block[3]) + "\n"))
                block = None
            elif block is not None:
                block[3].append(line[block[4]:] if line[: block[4]].strip() == "" else line)
    return out


_BLOCKS = _doc_blocks()
_PYTHON = [b for b in _BLOCKS if b[1] == "python" and "no-run" not in b[2]]
_SHELL = [b for b in _BLOCKS if b[1] in ("sh", "bash") and "python" in b[2] and "no-run" not in b[2]]


def test_the_documents_have_python_to_run():
    assert len(_PYTHON) >= 2 and len(_SHELL) >= 1, [b[0] for b in _PYTHON + _SHELL]


@pytest.mark.parametrize("block", _PYTHON, ids=[b[0] for b in _PYTHON])
def test_python_block_runs_as_written(block):
    # A fresh interpreter per block, as a reader would run it; `test_blocks_run_together`
    # runs them in one.
    place, _, _, text = block
    run = subprocess.run([sys.executable, "-c", text], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, f"{place}:\n{text}\n--- stdout\n{run.stdout}--- stderr\n{run.stderr}"


def test_python_blocks_run_together_in_one_interpreter():
    # A reader pasting every block into one session (the same files loaded again, unchanged).
    text = "\n".join(b[3] for b in _PYTHON if b[0].startswith("docs/python.md"))
    run = subprocess.run([sys.executable, "-c", text], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, f"{text}\n--- stdout\n{run.stdout}--- stderr\n{run.stderr}"


@pytest.mark.parametrize("block", _SHELL, ids=[b[0] for b in _SHELL])
def test_shell_block_runs_as_written(block, tmp_path):
    place, _, _, text = block
    # A directory of links to the repository's entries: relative paths resolve, outputs stay here.
    for entry in REPO.iterdir():
        if not entry.name.startswith(".") and entry.name != "target":
            (tmp_path / entry.name).symlink_to(entry)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    run = subprocess.run(["bash", "-c", "set -euo pipefail\n" + text], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, f"{place}:\n{text}\n--- stdout\n{run.stdout}--- stderr\n{run.stderr}"
