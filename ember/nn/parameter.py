"""``ember.nn.Parameter`` (re-exported from ember.tensor.parameter, which checkpoints need below
``ember.nn``), ``Buffer``, and the lazy placeholders ``UninitializedParameter`` /
``UninitializedBuffer`` (``torch.nn.parameter``).

NOTE [Uninitialized tensors]
An uninitialized parameter or buffer is a zero-element tensor of the requested device and dtype
whose shape is not known yet. Its ``shape`` raises, and public tensor methods other than a few
(``materialize``, dtype/device conversion, autograd flags) raise torch's ValueError.
``materialize(shape)`` gives it real (uninitialised) memory in place and turns its class into
``cls_to_become`` (``Parameter`` or ``Tensor``), so the module keeps the same object. Converting
one (``module.double()``) gives another uninitialized tensor of the new dtype or device.
"""

from __future__ import annotations

from ember.ops.creation import empty
from ember.tensor import Tensor
from ember.tensor.parameter import Parameter
from ember.tensor.tensor import make_tensor

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter", "is_lazy"]


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` holds for any tensor made by ``Buffer(...)``."""

    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer:
            return isinstance(instance, Tensor) and \
                getattr(instance, "_is_buffer", False) is True
        return super().__instancecheck__(instance)


class Buffer(metaclass=_BufferMeta):
    """A tensor marked as module state that is not a parameter (``torch.nn.Buffer``).

    Assigning it as a module attribute (``module.x = nn.Buffer(t)``) registers a buffer, as
    ``register_buffer`` does. Like torch, the result is a plain ``Tensor`` (``t`` detached,
    sharing its memory, keeping its ``requires_grad``) tagged so that
    ``isinstance(b, nn.Buffer)`` holds.

    Args:
        data: the buffer's tensor (an empty float tensor when None).
        persistent: whether the buffer goes into ``state_dict`` (default True).

    Example:
        >>> import ember
        >>> m = ember.nn.Module()
        >>> m.x = ember.nn.Buffer(ember.ones(2), persistent=False)
        >>> list(m.state_dict()), [n for n, _ in m.named_buffers()]
        ([], ['x'])
    """

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer: data must be a Tensor; got {type(data).__name__}")
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


# Public attributes an uninitialized tensor still answers (NOTE [Uninitialized tensors]).
_ALLOWED = frozenset({
    "materialize", "cls_to_become", "shape", "size", "share_memory_", "persistent",
    "requires_grad", "requires_grad_", "grad", "grad_fn", "is_leaf", "retains_grad",
    "dtype", "device", "data", "layout", "is_floating_point", "is_complex",
    "to", "cpu", "cuda", "float", "double", "half", "bfloat16", "copy_", "get_device",
    "is_cuda", "is_meta", "is_cpu",
})


def _uninitialized_error(cls_name: str, what: str) -> ValueError:
    return ValueError(
        f"Attempted to use an uninitialized parameter in {what}. This error happens when you "
        f"are using a `LazyModule` or explicitly manipulating `ember.nn.parameter.{cls_name}` "
        "objects. When using LazyModules Call `forward` with a dummy batch to initialize the "
        "parameters before calling ember functions")


class UninitializedTensorMixin:
    """Behaviour shared by the uninitialized placeholders (NOTE [Uninitialized tensors])."""

    __slots__ = ()
    cls_to_become: type = Tensor

    def __getattribute__(self, name: str):
        if name[:1] == "_" or name in _ALLOWED:
            return object.__getattribute__(self, name)
        if hasattr(Tensor, name):
            raise _uninitialized_error(type(self).__name__, f"Tensor.{name}")
        return object.__getattribute__(self, name)

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor memory of ``shape`` (uninitialised values) on ``device`` with
        ``dtype`` (default: the placeholder's own), and turn it into ``cls_to_become``.

        The object keeps its identity, so a module holding it sees the change.
        """
        from ember.nn.modules.module import _set_data

        if device is None:
            device = self._device
        if dtype is None:
            dtype = self._dtype
        if isinstance(shape, int):
            shape = (shape,)
        _set_data(self, empty(tuple(shape), device=device, dtype=dtype))
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into "
            "an initialized one. Call `forward` to initialize the parameters before accessing "
            "their attributes.")

    def share_memory_(self):
        """Raises: there is no memory to share yet."""
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
            "initialize the parameters before calling `module.share_memory()`.")

    def to(self, *args, **kwargs):
        """A new placeholder of the converted device/dtype (``self`` when nothing changes)."""
        plain = Tensor.to(self, *args, **kwargs)
        if plain is self:
            return self
        return self._like(plain._device, plain._dtype)

    def float(self):
        """``to(float32)`` as a placeholder."""
        return self._convert("float32")

    def double(self):
        """``to(float64)`` as a placeholder."""
        return self._convert("float64")

    def half(self):
        """``to(float16)`` as a placeholder."""
        return self._convert("float16")

    def bfloat16(self):
        """``to(bfloat16)`` as a placeholder."""
        return self._convert("bfloat16")

    def cpu(self):
        """``to("cpu")`` as a placeholder."""
        return self.to("cpu")

    def _convert(self, name: str):
        from ember.core import dtype as dt
        return self.to(getattr(dt, name))

    def __repr__(self, *, tensor_contents=None) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, protocol):
        return (type(self), (self._requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = self._like(self._device, self._dtype)
        memo[id(self)] = out
        return out


def is_lazy(param) -> bool:
    """Whether ``param`` is an uninitialized parameter or buffer (torch's ``is_lazy``)."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (``torch.nn.UninitializedParameter``).

    Lazy modules hold these until their first forward; ``materialize(shape)`` turns it into a
    regular ``Parameter`` in place. Its shape and most operations raise until then.

    Args:
        requires_grad: the materialised parameter's ``requires_grad`` (default True).
        device, dtype: what ``materialize`` uses by default.

    Example:
        >>> import ember
        >>> p = ember.nn.UninitializedParameter()
        >>> p.materialize((2, 3))
        >>> type(p).__name__, tuple(p.shape)
        ('Parameter', (2, 3))
    """

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return Parameter.__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        pass

    def _like(self, device, dtype):
        return UninitializedParameter(self._requires_grad, device, dtype)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (``torch.nn.UninitializedBuffer``).

    ``materialize(shape)`` turns it into a plain ``Tensor`` in place.

    Args:
        requires_grad: default False.
        device, dtype: what ``materialize`` uses by default.
        persistent: whether the buffer goes into ``state_dict`` when assigned to a module.

    Example:
        >>> buf = ember.nn.UninitializedBuffer()
        >>> buf.materialize((2, 3))
        >>> type(buf).__name__, buf.shape
        ('Tensor', ember.Size([2, 3]))
    """

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None,
                persistent: bool = True):
        data = empty(0, device=device, dtype=dtype)
        out = make_tensor(data._storage, data._shape, data._stride, data._offset, data._dtype,
                          data._device, version=data._ver, cls=cls)
        if requires_grad:
            out.requires_grad_(True)
        out.persistent = persistent
        out._is_buffer = True
        return out

    def __init__(self, requires_grad: bool = False, device=None, dtype=None,
                 persistent: bool = True) -> None:
        pass

    def _like(self, device, dtype):
        return UninitializedBuffer(self._requires_grad, device, dtype,
                                   getattr(self, "persistent", True))
