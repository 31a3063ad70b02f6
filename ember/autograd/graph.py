"""The autograd graph: Nodes, edges, saved tensors and hooks.

NOTE [Nodes and edges]
Each differentiable op that runs with grad enabled records a ``Node`` (its ``grad_fn``).
``next_functions`` holds one edge ``(node, input_nr)`` per differentiable forward input: the
node that produced that input and which of its outputs it was, ``(AccumulateGrad, 0)`` for a
leaf, ``(None, 0)`` when the input needs no gradient. ``sequence_nr`` grows with creation, so
running ready nodes highest-first replays the forward in reverse. A leaf holds its
``AccumulateGrad`` weakly; the graph holds it strongly.

NOTE [Saved tensors]
A node keeps what its formula needs as ``SavedTensor``s: the tensor (or what a
saved-tensors pack hook made of it) and the version it had when saved. Unpacking checks the
version, so a formula never silently reads data an in-place op overwrote. An op's own output
is saved without its grad_fn (no reference cycle) and re-attached on unpack.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable

from ember.tensor import Tensor, make_tensor

__all__ = ["Node", "AccumulateGrad", "SavedTensor", "RemovableHandle", "gradient_edge",
           "queue_callback", "to_dot", "to_svg",
           "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "register_multi_grad_hook", "increment_version"]

_sequence = itertools.count()
_INF = float("inf")


class RemovableHandle:
    """Returned by ``register_*hook``; ``remove()`` unregisters the hook.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> handle = x.register_hook(lambda g: g * 10)
        >>> (x * 1).sum().backward(); x.grad
        tensor([10., 10.])
        >>> handle.remove()
        >>> x.grad = None; (x * 1).sum().backward(); x.grad
        tensor([1., 1.])
    """

    _ids = itertools.count()

    def __init__(self, hooks_dict: dict):
        self.id = next(RemovableHandle._ids)
        self._ref = weakref.ref(hooks_dict) if hasattr(hooks_dict, "__weakref__") else \
            (lambda d=hooks_dict: d)

    def remove(self) -> None:
        d = self._ref()
        if d is not None:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _HookDict(dict):
    """An ordered id -> hook mapping that handles can reference weakly."""

    __slots__ = ("__weakref__",)


class Node:
    """A backward function in the graph (``grad_fn``).

    Subclasses implement ``apply(grads) -> tuple`` returning one gradient per edge of
    ``next_functions``.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> y = (x * 2).sum()
        >>> isinstance(y.grad_fn, ember.autograd.graph.Node), y.grad_fn.name()
        (True, 'SumBackward0')
        >>> [type(fn).__name__ for fn, _ in y.grad_fn.next_functions]
        ['MulBackward0']
    """

    __slots__ = ("next_functions", "sequence_nr", "_in_meta", "_num_outputs", "__weakref__",
                 "__dict__")

    # Rarely set per node: class-level defaults, so creating a node sets four slots only
    # (a node that gets a hook or a trace keeps it in its instance dict).
    _saved = None
    _pre_hooks = None
    _post_hooks = None
    _tensor_pre_hooks = None
    _retain_hooks = None
    _released = False
    _anomaly_trace = None

    def __init__(self):
        self.next_functions: tuple = ()
        self.sequence_nr = next(_sequence)
        self._in_meta: tuple = ()
        self._num_outputs = 1

    @property
    def metadata(self) -> dict:
        """A dict for user data attached to the node (created on first access)."""
        d = self.__dict__
        meta = d.get("_metadata")
        if meta is None:
            meta = d["_metadata"] = {}
        return meta

    def name(self) -> str:
        return type(self).__name__

    def apply(self, grads: tuple) -> tuple:
        raise NotImplementedError(f"{self.name()}.apply is not implemented")

    def __call__(self, *grads):
        return self.apply(grads)

    def release_variables(self) -> None:
        """Drop saved tensors (after a backward without ``retain_graph``)."""
        self._saved = None
        self._released = True

    # -- hooks ----------------------------------------------------------------------------------
    def register_hook(self, fn: Callable) -> RemovableHandle:
        """Post-hook ``fn(grad_inputs, grad_outputs)``; a returned tuple replaces grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = _HookDict()
        handle = RemovableHandle(self._post_hooks)
        self._post_hooks[handle.id] = fn
        return handle

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """Pre-hook ``fn(grad_outputs)``; a returned tuple replaces the incoming gradients."""
        if self._pre_hooks is None:
            self._pre_hooks = _HookDict()
        handle = RemovableHandle(self._pre_hooks)
        self._pre_hooks[handle.id] = fn
        return handle

    def _add_tensor_pre_hook(self, output_nr: int, fn: Callable) -> RemovableHandle:
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        hooks = self._tensor_pre_hooks.setdefault(output_nr, _HookDict())
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"


class AccumulateGrad(Node):
    """The sink of a leaf's gradient: accumulates into ``variable.grad``.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> acc = (x * 2).grad_fn.next_functions[0][0]
        >>> isinstance(acc, ember.autograd.graph.AccumulateGrad), acc.variable is x
        (True, True)
    """

    __slots__ = ("variable", "creation_nr")

    def __init__(self, variable: Tensor):
        # Node.__init__'s slots, set here (one frame less: a leaf's node is made per graph).
        # The drawn sequence number orders accumulators among themselves (NOTE [The backward
        # loop] in engine.py): all of them share ``sequence_nr`` = inf.
        self.creation_nr = next(_sequence)
        self.next_functions = ()
        self._num_outputs = 1
        self.variable = variable
        self.sequence_nr = _INF  # runs as soon as it is ready (PyTorch: UINT64_MAX)
        self._in_meta = ((variable._shape, variable._dtype),)

    def apply(self, grads: tuple) -> tuple:
        raise AssertionError("AccumulateGrad is run by the engine")  # pragma: no cover


def accumulator(t: Tensor) -> AccumulateGrad:
    """The leaf's AccumulateGrad node (created on first use, held weakly by the tensor)."""
    ref = t._accum
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(t)
        t._accum = weakref.ref(node)
    return node


def gradient_edge(t: Tensor):
    """The edge gradients for ``t`` flow into: (grad_fn, output_nr), its accumulator, or None.

    Example:
        >>> from ember.autograd.graph import gradient_edge
        >>> x = ember.ones(2, requires_grad=True)
        >>> y = x * 2
        >>> gradient_edge(y) == (y.grad_fn, 0), type(gradient_edge(x)[0]).__name__
        (True, 'AccumulateGrad')
    """
    fn = t.grad_fn
    if fn is not None:
        return fn, t._output_nr
    if t._requires_grad:
        return accumulator(t), 0
    return None


def increment_version(t: Tensor) -> None:
    """Bump ``t``'s version counter (shared with its views).

    Example:
        >>> from ember.autograd.graph import increment_version
        >>> x = ember.ones(2)
        >>> before = x._version
        >>> increment_version(x)
        >>> x._version - before
        1
    """
    t._ver.value += 1


# -- saved tensors -------------------------------------------------------------------------------
class _HooksState(threading.local):
    def __init__(self):
        self.stack: list = []
        self.disabled: str | None = None


_hooks_state = _HooksState()

_INFERENCE_SAVE_ERROR = ("Inference tensors cannot be saved for backward. To work around you "
                         "can make a clone to get a normal tensor and use it in autograd.")


class SavedTensor:
    """A tensor saved for backward with the version it had (see NOTE [Saved tensors])."""

    __slots__ = ("_data", "_version", "_is_output", "_packed", "_unpack", "_node_ref",
                 "_output_nr", "_requires_grad", "_leaf", "_name")

    def __init__(self, t: Tensor, node: Node | None = None, is_output: bool = False):
        if t._is_inference:
            raise RuntimeError(_INFERENCE_SAVE_ERROR)
        self._version = t._ver.value
        self._is_output = is_output
        self._node_ref = weakref.ref(node) if (is_output and node is not None) else None
        self._output_nr = t._output_nr
        self._requires_grad = t._requires_grad
        self._leaf = t if (not is_output and t.grad_fn is None and t._requires_grad) else None
        st = _hooks_state
        if st.disabled is not None:
            raise RuntimeError(st.disabled)
        stored = _without_history(t) if is_output else t
        if st.stack:
            pack, unpack = st.stack[-1]
            self._packed = pack(stored)
            self._unpack = unpack
            self._data = None
        else:
            self._packed = None
            self._unpack = None
            self._data = stored

    def unpack(self, node_name: str = "") -> Tensor:
        """The saved tensor, version-checked; history re-attached for saved outputs."""
        if self._unpack is not None:
            t = self._unpack(self._packed)
            if not isinstance(t, Tensor):
                raise TypeError("saved tensors unpack hook must return a Tensor")
            return t
        t = self._data
        if t._ver.value != self._version:
            shape = list(t._shape)
            what = f", which is output {self._output_nr} of {node_name}," if self._is_output \
                and node_name else ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [ember.{_type_name(t)} {shape}]{what} is at version "
                f"{t._ver.value}; expected version {self._version} instead. Hint: enable "
                "anomaly detection to find the operation that failed to compute its gradient, "
                "with ember.autograd.set_detect_anomaly(True).")
        if self._is_output:
            node = self._node_ref() if self._node_ref is not None else None
            if node is not None:
                t = _with_history(t, node, self._output_nr)
        elif self._leaf is not None:
            return self._leaf
        return t


_new = object.__new__


def save_input(t: Tensor) -> SavedTensor:
    """``SavedTensor(t)`` for a forward input; built directly when no hook or error applies."""
    st = _hooks_state
    if t._is_inference or st.stack or st.disabled is not None:
        return SavedTensor(t)
    s = _new(SavedTensor)  # the fields SavedTensor.__init__ sets that ``unpack`` reads
    s._version = t._ver.value
    s._is_output = False
    s._unpack = None
    s._leaf = t if (t.grad_fn is None and t._requires_grad) else None
    s._data = t
    return s


def _type_name(t: Tensor) -> str:
    return t._dtype.scalar_name + "Tensor"


def _without_history(t: Tensor) -> Tensor:
    out = make_tensor(t._storage, t._shape, t._stride, t._offset, t._dtype, t._device,
                      base=t._base, version=t._ver)
    if t._is_conj:  # NOTE [The conjugation bit] in ember/tensor/tensor.py
        out._is_conj = True
    if t._is_neg:
        out._is_neg = True
    return out


def _with_history(t: Tensor, node: Node, output_nr: int) -> Tensor:
    out = make_tensor(t._storage, t._shape, t._stride, t._offset, t._dtype, t._device,
                      base=t._base, version=t._ver)
    if t._is_conj:
        out._is_conj = True
    if t._is_neg:
        out._is_neg = True
    out.grad_fn = node
    out._output_nr = output_nr
    return out


class saved_tensors_hooks:
    """Context manager: ``pack(tensor)`` runs when autograd saves a tensor, ``unpack`` in backward.

    Example:
        >>> import ember
        >>> x = ember.ones(3, requires_grad=True)
        >>> with ember.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
        ...     y = (x * x).sum()
        >>> y.backward(); x.grad
        tensor([2., 2., 2.])
    """

    def __init__(self, pack_hook: Callable, unpack_hook: Callable):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _hooks_state.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _hooks_state.stack.pop()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are copied to CPU memory at save time and back at unpack time.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.autograd.graph.save_on_cpu():
        ...     y = (x * x).sum()
        >>> y.backward(); x.grad
        tensor([2., 2.])
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack(t: Tensor):
            return (t.device, t.to("cpu", copy=True))

        def unpack(packed):
            device, t = packed
            return t.to(device)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Inside this block, saving a tensor for backward raises RuntimeError(``error_message``)."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        self.prev = _hooks_state.disabled
        _hooks_state.disabled = self.error_message

    def __exit__(self, *exc):
        _hooks_state.disabled = self.prev


def register_multi_grad_hook(tensors, fn: Callable, *, mode: str = "all"):
    """Call ``fn(grads)`` once the gradients of all ``tensors`` are computed (mode "all").

    Example:
        >>> a, b = ember.ones(1, requires_grad=True), ember.ones(1, requires_grad=True)
        >>> seen = []
        >>> handle = ember.autograd.graph.register_multi_grad_hook(
        ...     (a, b), lambda grads: seen.append([g.item() for g in grads]))
        >>> (a * 2 + b * 3).sum().backward()
        >>> seen  # called once, with both gradients
        [[2.0, 3.0]]
    """
    tensors = tuple(tensors)
    count = len(tensors)
    state = {"grads": [None] * count, "seen": 0}
    handles = []

    def make_hook(i):
        def hook(g):
            state["grads"][i] = g
            state["seen"] += 1
            if mode == "any" or state["seen"] == count:
                fn(tuple(state["grads"]) if mode == "all" else g)
                state["grads"], state["seen"] = [None] * count, 0
        return hook

    for i, t in enumerate(tensors):
        handles.append(t.register_hook(make_hook(i)))

    class _Handle:
        def remove(self):
            for h in handles:
                h.remove()

    return _Handle()


def queue_callback(callback) -> None:
    """Run ``callback()`` once, when the current backward pass finishes.

    Example:
        >>> from ember.autograd.graph import queue_callback
        >>> x = ember.ones(2, requires_grad=True)
        >>> _ = x.register_hook(lambda g: queue_callback(lambda: print("backward done")))
        >>> (x * 2).sum().backward()
        backward done
    """
    from ember.autograd.engine import queue_callback as _queue
    _queue(callback)


def to_dot(tensor: Tensor, params: dict | None = None, show_saved: bool = True) -> str:
    """The graph behind ``tensor`` as Graphviz DOT text.

    Nodes are backward functions (with the shapes of their saved tensors), leaves are boxes
    labelled with their name from ``params`` (``{name: tensor}``) or their shape.

    Example:
        >>> from ember.autograd.graph import to_dot
        >>> w = ember.ones(3, requires_grad=True)
        >>> dot = to_dot((w * w).sum(), params={"w": w})
        >>> dot.splitlines()[0], "MulBackward0" in dot
        ('digraph autograd {', True)
    """
    names = {id(t): n for n, t in (params or {}).items()}
    lines = ["digraph autograd {", '  node [fontname="monospace", fontsize=10];']
    ids: dict = {}

    def node_id(obj) -> str:
        if id(obj) not in ids:
            ids[id(obj)] = f"n{len(ids)}"
        return ids[id(obj)]

    def label(node: Node) -> str:
        if isinstance(node, AccumulateGrad):
            v = node.variable
            name = names.get(id(v))
            shape = "x".join(map(str, v._shape)) or "scalar"
            return f"{name}\\n({shape})" if name else f"leaf ({shape})"
        text = node.name()
        saved = getattr(node, "_bound", None) or {}
        if show_saved:
            for key, val in saved.items():
                if isinstance(val, SavedTensor) and val._data is not None:
                    shape = "x".join(map(str, val._data._shape)) or "scalar"
                    text += f"\\n{key}: ({shape})"
        return text

    out_id = "output"
    lines.append(f'  {out_id} [label="output ({"x".join(map(str, tensor._shape)) or "scalar"})'
                 '", shape=oval, style=filled, fillcolor=lightgreen];')
    root = tensor.grad_fn if tensor.grad_fn is not None else (
        accumulator(tensor) if tensor._requires_grad else None)
    if root is None:
        lines.append("}")
        return "\n".join(lines)
    lines.append(f"  {node_id(root)} -> {out_id};")
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        style = ', shape=box, style=filled, fillcolor=lightblue' \
            if isinstance(node, AccumulateGrad) else ", shape=box"
        lines.append(f'  {node_id(node)} [label="{label(node)}"{style}];')
        for nxt, _ in node.next_functions:
            if nxt is not None:
                lines.append(f"  {node_id(nxt)} -> {node_id(node)};")
                stack.append(nxt)
    lines.append("}")
    return "\n".join(lines)


def to_svg(tensor: Tensor, params: dict | None = None) -> str | None:
    """``to_dot`` rendered by the ``dot`` program; None when Graphviz is not installed.

    Example:
        >>> from ember.autograd.graph import to_svg
        >>> svg = to_svg((ember.ones(2, requires_grad=True) * 2).sum())
        >>> svg is None or "<svg" in svg  # None without Graphviz's dot program
        True
    """
    import shutil
    import subprocess
    exe = shutil.which("dot")
    if exe is None:
        return None
    res = subprocess.run([exe, "-Tsvg"], input=to_dot(tensor, params).encode(),
                         capture_output=True, check=True)
    return res.stdout.decode()
