"""The backward order is a function of the graph (NOTE [Backward order] in engine.py).

The same order in every process (never object addresses or hash seeds); accumulators that
become ready together run in their creation order; where torch's order is observable (a
stack of Linear layers) it is torch's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import torch

import ember

_CAT_SCRIPT = """
import json, ember
params = [ember.randn(3, requires_grad=True) for _ in range(12)]
order = []
for i, p in enumerate(params):
    p.register_post_accumulate_grad_hook(lambda t, i=i: order.append(i))
# address-dependent layouts: allocate between the parameters' first uses
junk = [ember.randn(i + 1) for i in range(%d)]
ember.cat(params).sum().backward()
print(json.dumps(order))
"""


def _hook_order_in_fresh_process(seed: int) -> list[int]:
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    out = subprocess.run([sys.executable, "-c", _CAT_SCRIPT % (seed * 7)], env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_accumulation_order_is_the_same_in_fresh_processes():
    orders = {tuple(_hook_order_in_fresh_process(seed)) for seed in range(8)}
    assert orders == {tuple(range(12))}  # one order: the accumulators' creation order


def _hook_orders(lib, params, loss_fn):
    post, tensor = [], []
    for i, p in enumerate(params):
        p.register_post_accumulate_grad_hook(lambda t, i=i: post.append(i))
        p.register_hook(lambda g, i=i: tensor.append(i))
    loss_fn().backward()
    return post, tensor


def test_ready_accumulators_run_in_creation_order_not_use_order():
    ps = [ember.randn(2, requires_grad=True) for _ in range(6)]
    keep = [p * 1 for p in reversed(ps)]  # accumulators created last-to-first (and kept)
    post, tensor = _hook_orders(ember, ps, lambda: ember.cat(ps).sum())
    assert post == tensor == [5, 4, 3, 2, 1, 0]
    assert len(keep) == 6


def test_linear_stack_hook_order_matches_torch():
    def orders(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.ReLU(), lib.nn.Linear(5, 5),
                                  lib.nn.Tanh(), lib.nn.Linear(5, 3))
        names = [n for n, _ in model.named_parameters()]
        params = [p for _, p in model.named_parameters()]
        x = lib.ones(2, 4)
        post, tensor = _hook_orders(lib, params, lambda: model(x).sum())
        return [names[i] for i in post], [names[i] for i in tensor]

    e_post, e_tensor = orders(ember)
    t_post, t_tensor = orders(torch)
    assert e_post == t_post == ["4.bias", "4.weight", "2.bias", "2.weight", "0.bias",
                                "0.weight"]
    assert e_tensor == t_tensor


def test_linear_stack_without_bias_and_3d_input_matches_torch():
    def orders(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(4, 5, bias=False), lib.nn.Linear(5, 5),
                                  lib.nn.Linear(5, 2, bias=False))
        names = [n for n, _ in model.named_parameters()]
        params = [p for _, p in model.named_parameters()]
        out = []
        for x in (lib.ones(2, 4), lib.ones(3, 2, 4)):
            for p in params:
                p.grad = None
            post, _ = _hook_orders(lib, params, lambda x=x: model(x).sum())
            out.append([names[i] for i in post])
        return out

    assert orders(ember) == orders(torch)


def test_order_is_repeatable_within_a_process():
    def run():
        ember.manual_seed(0)
        ps = [ember.randn(3, requires_grad=True) for _ in range(5)]
        a = ps[0] * ps[1] + ps[2]
        b = ember.stack([ps[3], ps[4], a]).sum(0)
        post, _ = _hook_orders(ember, ps, lambda: (a * b).sum() + ember.cat(ps).sum())
        return post
    assert run() == run()
