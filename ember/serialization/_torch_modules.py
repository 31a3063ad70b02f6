"""torch's module classes and functions in whole-model pickles, read as ember's.

NOTE [Torch modules in whole-model pickles]
``torch.save(model)`` pickles each module as a GLOBAL naming its class
(``torch.nn.modules.linear.Linear``) plus its instance dict, in which functions may appear
(``torch.nn.functional.relu`` as a TransformerEncoderLayer's activation). ember's ``nn``
mirrors torch's file layout and attribute names, so a torch name ``torch.<path>.<name>`` is
read as the first of these that exists and is ember's own object:

1. ``ember.<path>.<name>``: the same path under ember (``torch.nn.modules.linear.Linear`` ->
   ``ember.nn.modules.linear.Linear``; ``torch.nn.functional.relu`` ->
   ``ember.nn.functional.relu``; ``torch.optim.adam.Adam`` -> ``ember.optim.adam.Adam``);
2. for ``torch.nn.modules.<file>.<name>``: ``ember.nn.<name>``, then ``ember.nn.modules.<name>``
   (classes that live in another file in ember, e.g. ``MultiheadAttention``,
   ``InstanceNorm2d``, ``Upsample``), and ``_RELOCATED`` for the few internal classes neither
   exports (``NonDynamicallyQuantizableLinear``, MultiheadAttention's ``out_proj``);
3. ``torch._C._nn.<name>`` -> ``ember.nn.functional.<name>`` (``gelu``, ...), and
   ``torch._C._VariableFunctions.<name>`` -> ``ember.<name>``.

What maps: every module class of ``torch.nn`` that ember.nn has under the same name (all of
them but ``Container``, ``CrossMapLRN2d``, ``LinearCrossEntropyLoss``,
``NLLLoss2d``, ``SyncBatchNorm``; a test keeps this list honest), among them ``Linear``,
``Bilinear``, ``Identity``, ``Sequential``/``ModuleList``/``ModuleDict``/``Parameter*``,
``Conv1d``-``Conv3d`` and transposes, the activations, ``LayerNorm``/``GroupNorm``/``RMSNorm``,
``BatchNorm*d``/``InstanceNorm*d``, ``Embedding``/``EmbeddingBag``, ``Dropout*``, pooling,
``Flatten``/``Unflatten``, ``Upsample``, ``RNN``/``LSTM``/``GRU`` (and cells),
``MultiheadAttention``, ``Transformer*``, the losses; and ``torch.nn.functional``'s functions.
Tensors, Parameters, storages, dtypes, devices and sizes map as for any checkpoint
(``_rebuild.DEFAULT_GLOBALS``). Module ``__setstate__`` (ember/nn/modules/module.py, NOTE
[Whole-module pickles]) then fills what torch's instance dicts lack.

With ``weights_only=False`` the lookup imports ember modules by name, as pickle imports any
class, so this package never imports ``ember.nn`` itself. With ``weights_only=True`` nothing is
imported: a torch name resolves only to an ember object the user allowlisted
(``add_safe_globals([ember.nn.Linear])`` allows ``torch.nn.modules.linear.Linear`` too).
"""

from __future__ import annotations

import importlib

from ember.serialization._common import UnpicklingError

__all__ = ["candidates", "find_equivalent", "allowlisted_equivalent", "no_equivalent",
           "ember_name"]

# torch.nn.modules classes that ember keeps in another file and does not export from ember.nn
_RELOCATED = {"NonDynamicallyQuantizableLinear": "ember.nn.modules.transformer"}


def candidates(module: str, name: str) -> list[tuple[str, str]]:
    """The ember (module, name) pairs a torch GLOBAL may mean, in the order they are tried."""
    if module != "torch" and not module.startswith("torch."):
        return []
    rest = module[len("torch"):]
    out = [("ember" + rest, name)]
    if module.startswith("torch.nn.modules."):
        out += [("ember.nn", name), ("ember.nn.modules", name)]
        if name in _RELOCATED:
            out.append((_RELOCATED[name], name))
    elif module == "torch._C._nn":
        out = [("ember.nn.functional", name)]
    elif module == "torch._C._VariableFunctions":
        out = [("ember", name)]
    return out


def _ours(obj) -> bool:
    return str(getattr(obj, "__module__", "") or "").startswith("ember")


def find_equivalent(module: str, name: str):
    """ember's object for torch's GLOBAL ``module.name`` (importing ember modules), or None."""
    for mod, attr in candidates(module, name):
        try:
            obj = getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError):
            continue
        if _ours(obj):
            return obj
    return None


def allowlisted_equivalent(module: str, name: str, allowed: dict):
    """The user-allowlisted ember object that torch's ``module.name`` means, or None.

    Nothing is imported: ``allowed`` maps ``module.qualname`` to the objects the user passed
    to ``add_safe_globals``/``safe_globals``.
    """
    pairs = candidates(module, name)
    if not pairs:
        return None
    wanted = {f"{mod}.{attr}" for mod, attr in pairs}
    for key, obj in allowed.items():
        if key in wanted:
            return obj
    # ember may define it in a private file (ember.nn.functional._core.relu): match the name
    family = ember_name(module, name).rsplit(".", 1)[0]
    for obj in allowed.values():
        if getattr(obj, "__name__", None) == name and \
                str(getattr(obj, "__module__", "")).startswith(family):
            return obj
    return None


def ember_name(module: str, name: str) -> str:
    """How to name ember's equivalent of torch's ``module.name`` to a user."""
    if module.startswith("torch.nn.modules."):
        return f"{_RELOCATED.get(name, 'ember.nn')}.{name}"
    pairs = candidates(module, name)
    return f"{pairs[0][0]}.{name}" if pairs else f"{module}.{name}"


def no_equivalent(module: str, name: str) -> UnpicklingError:
    """The refusal for a torch global that ember cannot map (``weights_only=False``)."""
    tried = ", ".join(f"{m}.{a}" for m, a in candidates(module, name))
    return UnpicklingError(
        f"load: the checkpoint uses torch's GLOBAL {module}.{name}, which has no ember "
        f"equivalent (looked for {tried}).\nhint: save the model's state_dict() with torch "
        "instead, build the model with ember and load_state_dict() it")
