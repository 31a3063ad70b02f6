"""ember.tensor.parameter.Parameter follows torch.nn.Parameter."""

from __future__ import annotations

import copy
import pickle

import torch

import ember
from ember.tensor.parameter import Parameter


def test_shares_storage_and_requires_grad():
    data = ember.arange(4.0)
    p = Parameter(data)
    assert isinstance(p, ember.Tensor) and type(p) is Parameter
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert p.untyped_storage() is data.untyped_storage()
    p.numpy(force=True)[0] = 7.0
    assert data.tolist()[0] == 7.0
    assert not Parameter(ember.ones(1), requires_grad=False).requires_grad


def test_default_is_empty_float():
    p, t = Parameter(), torch.nn.Parameter()
    assert tuple(p.shape) == tuple(t.shape) == (0,)
    assert p.dtype is ember.float32 and p.requires_grad


def test_repr_like_torch():
    p = Parameter(ember.tensor([1.0, 2.0]))
    t = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    assert repr(p) == repr(t)
    assert repr(p).startswith("Parameter containing:\ntensor(")


def test_ops_return_plain_tensors_and_gradients_flow():
    p = Parameter(ember.tensor([1.0, 2.0]))
    y = (p * 3).sum()
    assert type(p * 3) is ember.Tensor
    y.backward()
    assert p.grad.tolist() == [3.0, 3.0]


def test_deepcopy_copies_data():
    p = Parameter(ember.tensor([1.0, 2.0]), requires_grad=False)
    q = copy.deepcopy(p)
    assert type(q) is Parameter and not q.requires_grad
    assert q.untyped_storage() is not p.untyped_storage() and q.tolist() == [1.0, 2.0]
    memo = {}
    assert copy.deepcopy([p, p], memo)[0] is memo[id(p)]


def test_plain_pickle_round_trip():
    p = Parameter(ember.tensor([1.0, 2.0]))
    q = pickle.loads(pickle.dumps(p))
    assert type(q) is Parameter and q.requires_grad and q.tolist() == [1.0, 2.0]


def test_integer_parameter_must_not_require_grad():
    p = Parameter(ember.tensor([1, 2]), requires_grad=False)
    assert p.dtype is ember.int64
    try:
        Parameter(ember.tensor([1, 2]))
    except RuntimeError as e:
        assert "floating point" in str(e)
    else:
        raise AssertionError("an int64 Parameter requiring grad must be refused")
