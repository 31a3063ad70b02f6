"""Whole-model pickles both ways: module internals pickle as plain containers, ember's whole
models load back (``weights_only=False``, and ``True`` with the user's classes allowlisted),
torch's whole models load into ember through the class mapping (NOTE [Torch modules in
whole-model pickles]), and refusals name the global and the way out."""

from __future__ import annotations

import copy
import io
import pickle
import pickletools
import sys
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
import ember.serialization as es
from ember.serialization._common import TorchGlobal


class Net(ember.nn.Module):
    """A user model: nested modules, a buffer, a non-persistent buffer, a plain attribute."""

    def __init__(self):
        super().__init__()
        self.body = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(),
                                        ember.nn.LayerNorm(8))
        self.head = ember.nn.Linear(8, 2)
        self.register_buffer("scale", ember.full((2,), 0.5))
        self.register_buffer("cache", ember.zeros(1), persistent=False)
        self.name = "net"

    def forward(self, x):
        return self.head(self.body(x)) * self.scale


NET_CLASSES = [Net, ember.nn.Sequential, ember.nn.Linear, ember.nn.ReLU, ember.nn.LayerNorm]


def _record_hook(module, args, output):
    module.calls = getattr(module, "calls", 0) + 1


def _saved(obj, save=es.save) -> bytes:
    buf = io.BytesIO()
    save(obj, buf)
    return buf.getvalue()


def _globals(data: bytes) -> set[str]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        pkl = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    out = set()
    for op, arg, _ in pickletools.genops(pkl):
        if op.name == "GLOBAL":
            out.add(arg.replace(" ", "."))
    return out


def _close(a, b, x_scale: float = 1.0):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = np.asarray(b.detach().numpy())
    # float32 forward passes of a few layers: rounding of order eps * depth * magnitude
    tol = 64 * np.finfo(np.float32).eps * max(1.0, float(np.abs(b).max()), x_scale)
    np.testing.assert_allclose(a, b, rtol=0, atol=tol)


# -- module internals pickle as plain containers ---------------------------------------------
def test_module_state_has_only_plain_containers():
    net = Net()
    net.register_forward_hook(_record_hook)
    data = _saved(net)
    names = _globals(data)
    assert not any("_Hooks" in n for n in names), names
    assert {n for n in names if not n.startswith(("ember.nn.", "torch."))} <= \
        {"collections.OrderedDict", "__builtin__.set", f"{__name__}.Net",
         f"{__name__}._record_hook"}
    state = net.__getstate__()
    assert type(state["_forward_hooks"]) is OrderedDict and type(state["_parameters"]) is dict
    assert not any("_Hooks" in op for op in _pickle_globals(pickle.dumps(net, protocol=2)))


def _pickle_globals(pkl: bytes) -> list[str]:
    return [str(arg) for op, arg, _ in pickletools.genops(pkl)
            if op.name in ("GLOBAL", "STACK_GLOBAL", "SHORT_BINUNICODE", "BINUNICODE")]


def test_hooks_survive_a_pickle_and_new_hooks_can_be_removed():
    net = Net()
    net.register_forward_hook(_record_hook)
    loaded = es.load(io.BytesIO(_saved(net)), weights_only=False)
    loaded(ember.ones(1, 4))
    assert loaded.calls == 1
    seen = []
    handle = loaded.register_forward_pre_hook(lambda m, a: seen.append(1))
    loaded(ember.ones(1, 4))
    handle.remove()
    loaded(ember.ones(1, 4))
    assert seen == [1] and loaded.calls == 3
    twin = copy.deepcopy(loaded)
    twin(ember.ones(1, 4))
    assert twin.calls == 4 and loaded.calls == 3


# -- ember saves whole, ember loads --------------------------------------------------------
def _same_model(a: Net, b: Net) -> None:
    assert type(a) is type(b) and a.name == b.name
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        assert np.array_equal(sa[k].numpy(), sb[k].numpy()), k
    assert "cache" in dict(b.named_buffers()) and "cache" not in sb
    x = ember.randn(3, 4)
    assert np.array_equal(a(x).detach().numpy(), b(x).detach().numpy())


def test_ember_whole_model_loads_back_unsafe():
    net = Net()
    _same_model(net, es.load(io.BytesIO(_saved(net)), weights_only=False))


def test_ember_whole_model_loads_weights_only_with_safe_globals():
    net = Net()
    data = _saved(net)
    with es.safe_globals(NET_CLASSES):
        _same_model(net, es.load(io.BytesIO(data)))
    es.add_safe_globals(NET_CLASSES)
    try:
        _same_model(net, es.load(io.BytesIO(data), weights_only=True))
    finally:
        es.clear_safe_globals()


def test_ember_whole_model_refused_without_safe_globals_names_global_and_way_out():
    with pytest.raises(pickle.UnpicklingError) as info:
        es.load(io.BytesIO(_saved(Net())))
    msg = str(info.value)
    assert f"GLOBAL {__name__}.Net" in msg
    assert "safe_globals([Net])" in msg and "weights_only=False" in msg


# -- torch saves whole, ember loads ----------------------------------------------------------
def _torch_models():
    nn = torch.nn
    return {
        "linear": (nn.Linear(4, 3), (2, 4), "float"),
        "mlp": (nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.LayerNorm(8), nn.GELU(),
                              nn.Dropout(0.2), nn.Linear(8, 2)), (3, 4), "float"),
        "conv": (nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(),
                               nn.MaxPool2d(2), nn.Flatten(), nn.Linear(12, 2)),
                 (2, 2, 4, 4), "float"),
        "conv1d": (nn.Sequential(nn.ConvTranspose1d(2, 3, 3), nn.Conv1d(3, 2, 2), nn.Tanh(),
                                 nn.Softmax(dim=-1)), (2, 2, 5), "float"),
        "embedding": (nn.Sequential(nn.Embedding(10, 4, padding_idx=0), nn.LayerNorm(4)),
                      (2, 3), "index"),
        "transformer": (nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True),
                        (2, 3, 4), "float"),
        "lstm": (nn.LSTM(4, 5, num_layers=2, batch_first=True), (2, 3, 4), "float"),
    }


@pytest.mark.parametrize("name", list(_torch_models()))
def test_torch_whole_model_loads_into_ember_with_identical_weights_and_outputs(name):
    torch.manual_seed(0)
    model, shape, kind = _torch_models()[name]
    model.eval()
    data = _saved(model, torch.save)
    loaded = es.load(io.BytesIO(data), weights_only=False)
    assert type(loaded).__module__.startswith("ember.nn.")
    assert type(loaded).__name__ == type(model).__name__
    assert repr(loaded) == repr(model)
    ts, es_ = model.state_dict(), loaded.state_dict()
    assert list(ts) == list(es_)
    for k in ts:
        assert np.array_equal(ts[k].numpy(), es_[k].numpy()), k
    loaded.eval()
    x = torch.randint(0, 10, shape) if kind == "index" else torch.randn(shape)
    want, got = model(x), loaded(ember.from_numpy(x.numpy().copy()))
    if isinstance(want, tuple):
        want, got = want[0], got[0]
    _close(got, want)
    with es.safe_globals(ALL_EMBER_NN):  # weights-only: every state type torch writes reads
        safe = es.load(io.BytesIO(data)).eval()
    assert repr(safe) == repr(model)
    again = safe(ember.from_numpy(x.numpy().copy()))
    again = again[0] if isinstance(again, tuple) else again
    assert np.array_equal(again.detach().numpy(), got.detach().numpy())


ALL_EMBER_NN = [obj for obj in vars(ember.nn).values()
                if isinstance(obj, type) and issubclass(obj, ember.nn.Module)] + [
    ember.nn.modules.transformer.NonDynamicallyQuantizableLinear, ember.nn.functional.relu]


def test_torch_whole_model_trains_in_ember():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    loaded = es.load(io.BytesIO(_saved(model, torch.save)), weights_only=False)
    opt = ember.optim.SGD(loaded.parameters(), lr=0.1)
    x = ember.randn(8, 4)
    loss = (loaded(x) ** 2).mean()
    loss.backward()
    opt.step()
    assert all(p.grad is not None for p in loaded.parameters())
    assert (loaded(x) ** 2).mean().item() < loss.item()


class TorchUserNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 2)
        self.act = torch.nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x)) + 1


class EmberUserNet(ember.nn.Module):
    """The same class as a script with ``import ember as torch`` defines it."""

    def __init__(self):
        super().__init__()
        self.fc = ember.nn.Linear(3, 2)
        self.act = ember.nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x)) + 1


UserNet = EmberUserNet


def _torch_saved_user_net():
    """torch.save of a user subclass named ``UserNet`` in this module (the script's class)."""
    mod = sys.modules[__name__]
    net = TorchUserNet()
    TorchUserNet.__name__ = TorchUserNet.__qualname__ = "UserNet"
    mod.UserNet = TorchUserNet
    try:
        data = _saved(net, torch.save)
    finally:
        mod.UserNet = EmberUserNet
        TorchUserNet.__name__ = TorchUserNet.__qualname__ = "TorchUserNet"
    return net, data


def test_torch_user_subclass_loads_as_the_ember_class_of_the_same_name():
    EmberUserNet.__name__ = EmberUserNet.__qualname__ = "UserNet"
    try:
        net, data = _torch_saved_user_net()
        loaded = es.load(io.BytesIO(data), weights_only=False)
        assert type(loaded) is EmberUserNet
        x = torch.randn(4, 3)
        _close(loaded(ember.from_numpy(x.numpy().copy())), net(x))
        with es.safe_globals([EmberUserNet, ember.nn.Linear, ember.nn.ReLU]):
            again = es.load(io.BytesIO(data))
        assert type(again) is EmberUserNet and type(again.fc) is ember.nn.Linear
    finally:
        EmberUserNet.__name__ = EmberUserNet.__qualname__ = "EmberUserNet"


def test_torch_whole_model_weights_only_needs_ember_classes_allowlisted():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
    data = _saved(model, torch.save)
    with pytest.raises(pickle.UnpicklingError) as info:
        es.load(io.BytesIO(data))
    msg = str(info.value)
    assert "GLOBAL torch.nn.modules.container.Sequential" in msg
    assert "safe_globals([ember.nn.Sequential])" in msg and "weights_only=False" in msg
    with es.safe_globals([ember.nn.Sequential, ember.nn.Linear, ember.nn.ReLU]):
        loaded = es.load(io.BytesIO(data))
    assert type(loaded) is ember.nn.Sequential and type(loaded[0]) is ember.nn.Linear


def test_torch_transformer_layer_weights_only_names_each_ember_object_to_allow():
    layer = torch.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True).eval()
    data = _saved(layer, torch.save)
    allowed = [ember.nn.TransformerEncoderLayer, ember.nn.MultiheadAttention, ember.nn.Linear,
               ember.nn.LayerNorm, ember.nn.Dropout]
    refused = []
    while True:
        try:
            with es.safe_globals(allowed):
                loaded = es.load(io.BytesIO(data))
            break
        except pickle.UnpicklingError as e:
            name = str(e).split("safe_globals([", 1)[1].split("])", 1)[0]
            refused.append(name)
            obj = ember
            for part in name.split(".")[1:]:
                obj = getattr(obj, part)
            allowed.append(obj)
    assert refused == ["ember.nn.modules.transformer.NonDynamicallyQuantizableLinear",
                       "ember.nn.functional.relu"]
    x = torch.randn(2, 3, 4)
    _close(loaded.eval()(ember.from_numpy(x.numpy().copy())), layer(x))


def test_unsafe_load_of_an_unmapped_torch_global_names_it_and_the_way_out():
    data = _saved(TorchGlobal("torch.nn.modules.linear", "NoSuchLayer"))
    with pytest.raises(pickle.UnpicklingError) as info:
        es.load(io.BytesIO(data), weights_only=False)
    msg = str(info.value)
    assert "torch.nn.modules.linear.NoSuchLayer" in msg and "no ember equivalent" in msg
    assert "state_dict" in msg and "add_safe_globals" not in msg
    assert "weights_only=False" not in msg  # that is what the caller already did


def test_torch_functions_in_module_state_map_to_embers():
    layer = torch.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, activation="gelu")
    loaded = es.load(io.BytesIO(_saved(layer, torch.save)), weights_only=False)
    assert loaded.activation is ember.nn.functional.gelu


# -- ember saves whole, torch loads ------------------------------------------------------------
def test_torch_loads_an_ember_whole_model_as_a_state_dict_compatible_module():
    net = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.ReLU(), ember.nn.Linear(3, 2))
    obj = torch.load(io.BytesIO(_saved(net)), weights_only=False)
    sd = obj.state_dict()
    assert all(isinstance(v, torch.Tensor) for v in sd.values())
    twin = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    twin.load_state_dict(sd)
    x = torch.randn(5, 4)
    _close(net(ember.from_numpy(x.numpy().copy())), twin(x))


# -- the mapping covers torch.nn ----------------------------------------------------------------
UNMAPPED = {"Container", "CrossMapLRN2d", "LinearCrossEntropyLoss", "NLLLoss2d", "SyncBatchNorm"}


def test_every_torch_nn_module_class_maps_except_the_documented_ones():
    from ember.serialization._torch_modules import find_equivalent

    unmapped = set()
    for name in dir(torch.nn):
        cls = getattr(torch.nn, name)
        if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
            continue
        found = find_equivalent(cls.__module__, cls.__name__)
        if found is None:
            unmapped.add(name)
        else:
            assert isinstance(found, type) and issubclass(found, ember.nn.Module), name
            assert found.__name__ == cls.__name__, name
    assert unmapped == UNMAPPED
