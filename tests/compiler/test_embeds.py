"""NOTE [Folding embeds]: the backward of a split/unbind whose pieces are all used writes the
pieces' gradients into one buffer (no zero fill when they tile it) instead of adding one
zero-filled buffer per piece; gradients stay equal to eager's."""

from __future__ import annotations

import pytest

import ember
from ember.compiler.embeds import fold_embeds
from ember.compiler.graph import Graph
from tests.compiler.test_aot import BACKENDS, _region_node


def _compiled_grad(fn, x, backend):
    x1 = x.detach().clone().requires_grad_()
    out = ember.compile(fn, backend=backend)(x1)
    region = _region_node(out).region
    out.backward()
    x2 = x.detach().clone().requires_grad_()
    fn(x2).backward()
    # the NumPy backend runs eager's roundings; C kernels call libmvec's sin/exp (a few ulp)
    tol = 0 if backend == "numpy" else 8 * 2.0 ** -52
    ember.testing.assert_close(x1.grad, x2.grad, rtol=tol, atol=tol)
    return region.bw_graph


def _full_buffers(bw, shape):
    """(zeros, empty, add) call counts of the input's full shape in the backward graph."""
    calls = [n for n in bw.nodes if n.op == "call" and tuple(n.val.shape) == shape]
    names = [n.target.name for n in calls if hasattr(n.target, "name")]
    return names.count("zeros"), names.count("empty"), names.count("add")


@pytest.mark.parametrize("backend", BACKENDS)
def test_split_pieces_land_in_one_unfilled_buffer(backend):
    def fn(x):
        q, k, v = x.split(4, dim=-1)
        return (q * k.sin() + v.exp()).sum()

    x = ember.randn(3, 5, 12, dtype=ember.float64)
    bw = _compiled_grad(fn, x, backend)
    assert _full_buffers(bw, (3, 5, 12)) == (0, 1, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_unbind_pieces_fold_too(backend):
    def fn(x):
        a, b, c = x.unbind(1)
        return (a * b + c * c).sum()

    x = ember.randn(4, 3, 2, dtype=ember.float64)
    bw = _compiled_grad(fn, x, backend)
    assert _full_buffers(bw, (4, 3, 2)) == (0, 1, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_unused_piece_keeps_the_zero_fill(backend):
    def fn(x):
        q, _, v = x.split(4, dim=0)
        return (q * v).sum()

    x = ember.randn(12, 3, dtype=ember.float64)
    bw = _compiled_grad(fn, x, backend)
    assert _full_buffers(bw, (12, 3)) == (1, 0, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_overlapping_and_strided_regions_are_not_folded(backend):
    def overlapping(x):
        return (x[:, :4].exp() * x[:, 2:]).sum()

    def strided(x):
        return (x[:, ::2] * x[:, 1::2].cos()).sum()

    x = ember.randn(4, 6, dtype=ember.float64)
    assert _full_buffers(_compiled_grad(overlapping, x, backend), (4, 6))[2] == 1
    assert _full_buffers(_compiled_grad(strided, x, backend), (4, 6))[2] == 1


def _two_embeds():
    """A graph writing ``s`` into the top and the bottom half of two zero (4, 3) buffers."""
    g = Graph()
    s = g.placeholder("s", ember.ones(2, 3))
    buffers = []
    for start in (0, 2):
        z = g.call("aten::zeros", ((4, 3),))
        g.call("aten::copy_", (g.call("aten::narrow", (z, 0, start, 2)), s))
        buffers.append(z)
    return g, buffers


def test_a_buffer_read_elsewhere_is_not_folded():
    g, (z1, z2) = _two_embeds()
    total = g.call("aten::add.Tensor", (z1, z2))
    g.output((total, g.call("aten::sum", (z1,))))
    assert fold_embeds(g) == 0
    g.lint()


def test_folding_keeps_the_graph_valid():
    g, (z1, z2) = _two_embeds()
    g.output((g.call("aten::add.Tensor", (z1, z2)),))
    assert fold_embeds(g) == 1
    g.lint()
    assert [n.target.name for n in g.calls()].count("add") == 0
    assert g.output_node.args[0][0] is z1 and z1.target.name == "empty"
