"""The op table: every entry of tests/ops/opdb/*.py against torch, and Meta against CPU."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
import torch

import ember
from tests.opinfo import OpInfo, assert_same, assert_view_geometry, to_meta, to_torch
from tests.ops import opdb


def _collect() -> list[OpInfo]:
    infos = []
    for mod in pkgutil.iter_modules(opdb.__path__):
        infos += importlib.import_module(f"tests.ops.opdb.{mod.name}").OPS
    return infos


OP_DB = _collect()
CASES = [pytest.param(info, d, id=f"{info.name}-{d}") for info in OP_DB for d in info.dtypes]


def _run(lib, info, sample, converted):
    args, kwargs = converted
    return info.fn(lib, *args, **kwargs)


@pytest.mark.parametrize("info,dtype", CASES)
def test_matches_torch(info: OpInfo, dtype: str):
    n = 0
    for sample in info.samples(dtype):
        n += 1
        t_args = to_torch((sample.args, sample.kwargs))
        try:
            expected = info.fn(torch, *t_args[0], **t_args[1])
        except Exception as exc:  # torch rejects it: ember must reject it with the same type
            with pytest.raises(type(exc) if not isinstance(exc, NotImplementedError)
                               else NotImplementedError):
                info.fn(ember, *sample.args, **sample.kwargs)
            continue
        got = info.fn(ember, *sample.args, **sample.kwargs)
        try:
            assert_same(got, expected, info, dtype)
            if info.is_view:
                assert_view_geometry(got, expected, sample.args[0], t_args[0][0])
        except AssertionError as e:
            raise AssertionError(f"sample {sample!r}: {e}") from None
    assert n > 0, "no samples"


@pytest.mark.parametrize("info,dtype", [c for c in CASES if c.values[0].meta])
def test_meta_matches_cpu(info: OpInfo, dtype: str):
    for sample in info.samples(dtype):
        try:
            cpu = info.fn(ember, *sample.args, **sample.kwargs)
        except Exception as exc:
            with pytest.raises(type(exc)):
                info.fn(ember, *to_meta(sample.args), **to_meta(sample.kwargs))
            continue
        meta = info.fn(ember, *to_meta(sample.args), **to_meta(sample.kwargs))
        outs = cpu if isinstance(cpu, tuple | list) else (cpu,)
        metas = meta if isinstance(meta, tuple | list) else (meta,)
        for c, m in zip(outs, metas):
            if not isinstance(c, ember.Tensor):
                continue
            assert m.device.type == "meta", f"sample {sample!r}: meta result on {m.device}"
            assert (m.shape, m.dtype) == (c.shape, c.dtype), f"sample {sample!r}"
            if c.numel() > 1:
                assert m.stride() == c.stride(), f"sample {sample!r}: stride"


ERROR_CASES = [pytest.param(info, id=info.name) for info in OP_DB if info.errors]


@pytest.mark.parametrize("info", ERROR_CASES)
def test_errors_match_torch(info: OpInfo):
    for err in info.errors():
        s = err.sample
        t_args = to_torch((s.args, s.kwargs))
        with pytest.raises(err.error):
            info.fn(torch, *t_args[0], **t_args[1])
        with pytest.raises(err.error, match=err.match):
            info.fn(ember, *s.args, **s.kwargs)
