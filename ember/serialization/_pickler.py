"""Writing data.pkl: ember objects pickled as PyTorch pickles them (protocol 2).

Tensors reduce to ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, OrderedDict())``, Parameters to ``torch._utils._rebuild_parameter(tensor,
requires_grad, OrderedDict())``, storages to persistent ids ``('storage', torch.FloatStorage,
key, location, numel)``, dtypes to ``torch.float32`` ..., devices to ``torch.device(...)``.
Those names are written by hand (NOTE [Torch names without torch] in _common.py): the pure
Python pickler lets a dispatch-table entry emit the GLOBAL opcode for ``TorchGlobal`` objects.
"""

from __future__ import annotations

import pickle
from collections import OrderedDict

from ember.core import dtype as dt
from ember.core.device import META, Device
from ember.core.dtype import DType
from ember.memory.storage import Storage
from ember.serialization._common import STORAGE_NAMES, TorchGlobal
from ember.tensor import Size, Tensor, make_tensor
from ember.tensor.parameter import Parameter

__all__ = ["CheckpointPickler"]

_REBUILD_V2 = TorchGlobal("torch._utils", "_rebuild_tensor_v2")
_REBUILD_V3 = TorchGlobal("torch._utils", "_rebuild_tensor_v3")
_REBUILD_PARAMETER = TorchGlobal("torch._utils", "_rebuild_parameter")
_REBUILD_META = TorchGlobal("torch._utils", "_rebuild_meta_tensor_no_storage")
_ORDERED_DICT = TorchGlobal("collections", "OrderedDict")
_DEVICE = TorchGlobal("torch", "device")
_SIZE = TorchGlobal("torch", "Size")
_UNTYPED = TorchGlobal("torch.storage", "UntypedStorage")


class _StorageRef:
    """A storage as seen by one dtype: what a persistent id stands for."""

    __slots__ = ("storage", "dtype")

    def __init__(self, storage: Storage, dtype: DType | None):
        self.storage, self.dtype = storage, dtype


class CheckpointPickler(pickle._Pickler):
    """A protocol-2 pickler that writes ember tensors in PyTorch's checkpoint format.

    After ``dump``, ``storages`` lists ``(key, Storage)`` in first-seen order: the records the
    archive must hold under ``data/<key>``.
    """

    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file):
        super().__init__(file, protocol=2)
        self.storages: list[tuple[str, Storage]] = []
        self._refs: dict[int, _StorageRef] = {}   # id(storage) -> ref (the ref keeps it alive)
        self._keys: dict[int, str] = {}

    def _save_torch_global(self, obj: TorchGlobal) -> None:
        self.write(pickle.GLOBAL + obj.module.encode() + b"\n" + obj.name.encode() + b"\n")
        self.memoize(obj)

    dispatch[TorchGlobal] = _save_torch_global

    def _save_dtype(self, obj: DType) -> None:
        # PyTorch pickles a dtype as the bare global torch.<name>, not as a call.
        self.save(TorchGlobal("torch", obj.name))
        self.memoize(obj)

    dispatch[DType] = _save_dtype

    def _ref(self, storage: Storage, dtype: DType | None) -> _StorageRef:
        ref = self._refs.get(id(storage))
        if ref is None:
            ref = self._refs[id(storage)] = _StorageRef(storage, dtype)
        elif ref.dtype is not dtype:
            raise RuntimeError("save: Cannot save multiple tensors or storages that view the "
                               f"same data as different types; got {ref.dtype} and {dtype}")
        return ref

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            return self._storage_pid(obj)
        if type(obj) is Storage:
            return self._storage_pid(self._ref(obj, None))
        return None

    def _storage_pid(self, ref: _StorageRef) -> tuple:
        st = ref.storage
        key = self._keys.get(id(st))
        if key is None:
            key = self._keys[id(st)] = str(len(self._keys))
            self.storages.append((key, st))
        if ref.dtype is None or ref.dtype is dt.complex32:  # torch has no ComplexHalfStorage
            return ("storage", _UNTYPED, key, str(st.device), st.nbytes())
        item = ref.dtype.itemsize
        if st.nbytes() % item:
            raise RuntimeError(f"save: a storage of {st.nbytes()} bytes cannot be saved as "
                               f"{ref.dtype} (itemsize {item})")
        return ("storage", TorchGlobal("torch", STORAGE_NAMES[ref.dtype]), key,
                str(st.device), st.nbytes() // item)

    def reducer_override(self, obj):
        cls = type(obj)
        if cls is Tensor:
            return self._reduce_tensor(obj)
        if cls is Parameter:
            plain = make_tensor(obj._storage, obj._shape, obj._stride, obj._offset, obj._dtype,
                                obj._device)
            return (_REBUILD_PARAMETER, (plain, obj.requires_grad, OrderedDict()))
        if cls is Device:
            args = (obj.type,) if obj.index is None else (obj.type, obj.index)
            return (_DEVICE, args)
        if cls is Size:
            return (_SIZE, (tuple(obj),))
        if isinstance(obj, Tensor):
            raise pickle.PicklingError(f"save: cannot save tensor subclass {cls.__name__}; "
                                       "expected Tensor or Parameter")
        return NotImplemented

    def _reduce_tensor(self, t: Tensor):
        rg = t.requires_grad
        if t.device is META:
            return (_REBUILD_META, (t.dtype, tuple(t.shape), tuple(t.stride()), rg))
        ref = self._ref(t.untyped_storage(), t.dtype)
        args = (ref, t.storage_offset(), tuple(t.shape), tuple(t.stride()), rg, OrderedDict())
        rebuild = _REBUILD_V2
        if t.dtype is dt.complex32:  # an untyped storage and the dtype, as torch writes it
            rebuild, args = _REBUILD_V3, (*args, t.dtype)
        # torch's tensor metadata: the stored values, read conjugated and/or negated
        bits = {k: True for k, on in (("conj", t._is_conj), ("neg", t._is_neg)) if on}
        if bits:
            args += (bits,)
        return (rebuild, args)
