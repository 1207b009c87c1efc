"""pyo3-dlpack functions inside a compiled torch program: each is registered as a torch
custom op (`torch.library.custom_op`) with a fake implementation that gives the output's
shape and dtype without running Rust, so torch.compile traces through it in one graph and
calls the Rust function at run time (the guide's recipe, returning.md, "Inside `torch.compile`").

The backend is `aot_eager`: the whole of torch.compile's tracing (Dynamo, AOTAutograd's
functionalisation of the mutating op) without Inductor's code generation, which needs a C++
compiler at run time; `test_inductor` runs Inductor too where one is present."""

import shutil

import pytest
import torch
from torch._dynamo.testing import CompileCounterWithBackend

import matrix_ops


# The recipe: a function returning a new tensor, and one writing its argument in place.
@torch.library.custom_op("matrix_ops::matvec", mutates_args=())
def matvec(m: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    # matvec returns a DLPackTensor; torch.from_dlpack takes its memory without a copy.
    return torch.from_dlpack(matrix_ops.matvec(m.contiguous(), v))


@matvec.register_fake
def _(m: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return m.new_empty(m.shape[0])


@torch.library.custom_op("matrix_ops::scale_", mutates_args=("m",))
def scale_(m: torch.Tensor, factor: float) -> None:
    matrix_ops.scale_(m, factor)  # writes m's memory from Rust


@scale_.register_fake
def _(m: torch.Tensor, factor: float) -> None:
    return None


def program(m, v):
    scaled = m * 2.0  # torch ops around the Rust ones, in the same graph
    scale_(scaled, 0.5)
    return matvec(scaled, v) + 1.0


M = torch.arange(6, dtype=torch.float32).reshape(2, 3)
V = torch.tensor([1.0, 0.0, 2.0])
EXPECTED = [5.0, 14.0]  # (M @ V) + 1: rows [0, 1, 2] and [3, 4, 5]


def test_the_custom_ops_pass_torchs_own_checks():
    # Fake implementation against the real one, schema, autograd registration.
    torch.library.opcheck(matvec, (M, V))
    torch.library.opcheck(scale_, (M.clone(), 3.0))


def test_a_compiled_program_calls_rust_in_one_graph():
    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(program, backend=counter, fullgraph=True)
    m = M.clone()
    assert compiled(m, V).tolist() == EXPECTED
    assert compiled(m + 1.0, V).tolist() == [8.0, 17.0]  # same shapes: no recompilation
    assert counter.frame_count == 1
    assert m.tolist() == M.tolist()  # the mutation was of an intermediate only
    # Both Rust functions are nodes of the traced graph, not graph breaks.
    (graph,) = counter.graphs
    targets = {str(node.target) for node in graph.graph.nodes if node.op == "call_function"}
    assert {"matrix_ops.matvec.default", "matrix_ops.scale_.default"} <= targets


def test_eager_calls_of_the_ops_give_the_same_values():
    assert program(M.clone(), V).tolist() == EXPECTED
    t = torch.ones(2, 2)
    scale_(t, 3.0)
    assert t.tolist() == [[3.0, 3.0], [3.0, 3.0]]


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None, reason="no C++ compiler")
def test_inductor():
    compiled = torch.compile(program, fullgraph=True)
    assert compiled(M.clone(), V).tolist() == EXPECTED
