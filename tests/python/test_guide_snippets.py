"""Every ```python block of the README and of the guide's chapters, run as written, each in
a new interpreter (a snippet may register torch custom ops or start workers). They use the
example extensions (`image_buffer`, `matrix_ops`), which `make py-test` installs. A snippet
that raises or fails an assertion fails its test."""

import glob
import os
import re
import subprocess
import sys

import pytest

# The examples the snippets call; `make py-test` installs them (`make test-matrix` does not).
for example in ["image_buffer", "matrix_ops"]:
    pytest.importorskip(example, reason=f"the example extension {example} is not installed")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCUMENTS = ["README.md", *sorted(glob.glob("pyo3-dlpack/guide/*.md", root_dir=ROOT))]
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)


def snippets():
    seen = set()
    for name in DOCUMENTS:
        path = os.path.realpath(os.path.join(ROOT, name))
        if path in seen:  # a chapter that is a link to another document
            continue
        seen.add(path)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 2
            yield pytest.param(match.group(1), id=f"{name}:{line}")


SNIPPETS = list(snippets())


def test_the_documents_have_snippets():
    assert len(SNIPPETS) >= 5


@pytest.mark.parametrize("code", SNIPPETS)
def test_snippet(code, tmp_path):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=600)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
