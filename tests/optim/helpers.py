"""Shared by the optimizer and scheduler tests: twin parameters in ember and torch, state
conversion between the libraries, and comparisons."""

from __future__ import annotations

import numpy as np
import torch

import ember

TOL = {np.float32: dict(rtol=1e-6, atol=1e-7), np.float64: dict(rtol=1e-12, atol=1e-14)}


def _leaf(lib, array: np.ndarray, transpose: bool):
    """A leaf requiring grad; ``transpose`` makes it a non-contiguous (transposed) view."""
    base = lib.from_numpy(np.ascontiguousarray(array.T if transpose else array).copy())
    t = base.t() if transpose else base
    return t.detach().requires_grad_(True)


SPECS = [((3, 4), False), ((5,), False), ((4, 3), True)]  # (shape, non-contiguous)


def make_params(dtype=np.float32, seed: int = 0):
    """Identical parameters in both libraries: a matrix, a vector and a transposed matrix."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape).astype(dtype) for shape, _ in SPECS]
    ours = [_leaf(ember, a, tr) for a, (_, tr) in zip(arrays, SPECS)]
    theirs = [_leaf(torch, a, tr) for a, (_, tr) in zip(arrays, SPECS)]
    assert not ours[2].is_contiguous() and not theirs[2].is_contiguous()
    return ours, theirs


def make_grads(steps: int, dtype=np.float32, seed: int = 1):
    """Precomputed gradients per step, fed identically to both libraries."""
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(shape).astype(dtype) for shape, _ in SPECS]
            for _ in range(steps)]


def set_grads(ours, theirs, grads) -> None:
    for p, q, g, (_, tr) in zip(ours, theirs, grads, SPECS):
        p.grad = _leaf(ember, g, tr).detach()
        q.grad = _leaf(torch, g, tr).detach()


def to_torch(value):
    """An ember state dict (or any nested value) with tensors converted to torch's."""
    if isinstance(value, ember.Tensor):
        return torch.from_numpy(value.detach().numpy().copy())
    if isinstance(value, dict):
        return {k: to_torch(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(to_torch(v) for v in value)
    return value


def to_ember(value):
    """A torch state dict (or nested value) with tensors converted to ember's."""
    if isinstance(value, torch.Tensor):
        return ember.from_numpy(value.detach().numpy().copy())
    if isinstance(value, dict):
        return {k: to_ember(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(to_ember(v) for v in value)
    return value


def np_of(t) -> np.ndarray:
    return t.detach().numpy()


def assert_params_close(ours, theirs, dtype=np.float32, tol=None) -> None:
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(np_of(p), np_of(q), **(tol or TOL[dtype]))


def assert_state_close(ember_opt, torch_opt, dtype=np.float32, tol=None) -> None:
    """Same per-parameter state (keys, dtypes, values) and the same group options; ``tol``
    replaces the dtype's default tolerances."""
    ours, theirs = ember_opt.state_dict(), torch_opt.state_dict()
    assert ours["state"].keys() == theirs["state"].keys()
    for idx, st in theirs["state"].items():
        assert ours["state"][idx].keys() == st.keys(), idx
        for key, value in st.items():
            mine = ours["state"][idx][key]
            if isinstance(value, torch.Tensor):
                assert isinstance(mine, ember.Tensor), key
                assert tuple(mine.shape) == tuple(value.shape), key
                assert str(mine.dtype).split(".")[-1] == str(value.dtype).split(".")[-1], key
                np.testing.assert_allclose(np_of(mine), np_of(value), **(tol or TOL[dtype]),
                                           err_msg=f"state {idx}.{key}")
            else:
                assert mine == value, key
    assert_groups_equal(ours["param_groups"], theirs["param_groups"])


def assert_groups_equal(ours, theirs) -> None:
    assert len(ours) == len(theirs)
    for g, h in zip(ours, theirs):
        assert g.keys() == h.keys()
        for key in h:
            assert g[key] == h[key], key
