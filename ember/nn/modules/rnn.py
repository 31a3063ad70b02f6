"""Recurrent layers: RNN (tanh/relu), LSTM (with projections), GRU and their Cell versions.

Parameter names, shapes and gate orders are torch's (``weight_ih_l{k}{_reverse}`` with LSTM
gates ``i, f, g, o`` and GRU gates ``r, z, n``), so state_dicts load across libraries.

NOTE [Recurrence with ember ops]
Per layer and direction the input projection of the whole sequence is one GEMM; only the
hidden-to-hidden product stays inside a Python loop over time steps (one ``addmm`` per step,
with the input projection as its addend). ``b_hh`` is folded into the input projection for
RNN and LSTM (it is a plain addend there); GRU keeps it per step because ``b_hn`` sits inside
``r * (W_hn h + b_hn)``. A PackedSequence runs the same loop over ``batch_sizes``: sequences
leave the batch (forward direction, their final state is kept) or join it with their initial
state (reverse direction) as the step's batch size changes. Autograd records the loop.
"""

from __future__ import annotations

import math
import warnings

from ember.nn import init
from ember.nn.functional import _core as F
from ember.nn.modules.module import Module
from ember.nn.utils.rnn import PackedSequence
from ember.ops.creation import empty, zeros
from ember.ops.linalg import addmm
from ember.ops.shape import cat, stack
from ember.tensor import Tensor
from ember.tensor.parameter import Parameter

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


# -- one time step: (projected input, state, W_hh^T, b_hh, W_hr^T) -> new state ---------------
def _tanh_step(gi, state, w_hh_t, b_hh, w_hr_t):
    return (addmm(gi, state[0], w_hh_t).tanh(),)


def _relu_step(gi, state, w_hh_t, b_hh, w_hr_t):
    return (addmm(gi, state[0], w_hh_t).relu(),)


def _lstm_step(gi, state, w_hh_t, b_hh, w_hr_t):
    h, c = state
    gates = addmm(gi, h, w_hh_t)  # (N, 4H): i, f, g, o
    i, f, _, o = gates.sigmoid().chunk(4, 1)  # one sigmoid op for three gates
    g = gates.chunk(4, 1)[2].tanh()
    c = f * c + i * g
    h = o * c.tanh()
    return (h if w_hr_t is None else h.matmul(w_hr_t)), c


def _gru_step(gi, state, w_hh_t, b_hh, w_hr_t):
    h = state[0]
    gh = h.matmul(w_hh_t) if b_hh is None else addmm(b_hh, h, w_hh_t)
    hidden = h.shape[1]
    r, z = (gi[:, :2 * hidden] + gh[:, :2 * hidden]).sigmoid().chunk(2, 1)  # (N, 2H) -> r, z
    n = (gi[:, 2 * hidden:] + r * gh[:, 2 * hidden:]).tanh()
    return (n + z * (h - n),)  # == (1 - z) * n + z * h


_STEPS = {"RNN_TANH": _tanh_step, "RNN_RELU": _relu_step, "LSTM": _lstm_step,
          "GRU": _gru_step}
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# -- running one direction of one layer -------------------------------------------------------
def _scan(step, xs, state, weights, reverse: bool):
    """Dense batch: ``xs`` is a list of ``(N, G)`` projected inputs; returns outputs, state."""
    outs = [None] * len(xs)
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    for t in order:
        state = step(xs[t], state, *weights)
        outs[t] = state[0]
    return outs, state


def _scan_packed_forward(step, xs, state, weights, sizes):
    """Packed, forward in time: rows leave the batch as sequences end (their state is kept)."""
    outs, ended = [], []
    for x, b in zip(xs, sizes):
        if b < state[0].shape[0]:
            ended.append(tuple(s[b:] for s in state))
            state = tuple(s[:b] for s in state)
        state = step(x, state, *weights)
        outs.append(state[0])
    pieces = [state, *reversed(ended)]  # rows in batch order
    final = tuple(cat([p[i] for p in pieces]) for i in range(len(state)))
    return outs, final


def _scan_packed_reverse(step, xs, init_state, weights, sizes):
    """Packed, backward in time: sequences join the batch with their initial state."""
    outs = [None] * len(xs)
    state = tuple(s[:sizes[-1]] for s in init_state)
    for t in range(len(xs) - 1, -1, -1):
        have, b = state[0].shape[0], sizes[t]
        if b > have:
            state = tuple(cat([s, s0[have:b]]) for s, s0 in zip(state, init_state))
        state = step(xs[t], state, *weights)
        outs[t] = state[0]
    return outs, state


class RNNBase(Module):
    """The shared engine of :class:`RNN`, :class:`LSTM` and :class:`GRU` (``mode`` picks one).

    See NOTE [Recurrence with ember ops]. Parameters per layer ``k`` and direction
    (suffix ``''`` or ``'_reverse'``): ``weight_ih_l{k}`` ``(G*H, in)``, ``weight_hh_l{k}``
    ``(G*H, H_out)``, ``bias_ih_l{k}``/``bias_hh_l{k}`` ``(G*H,)`` and, for an LSTM with
    ``proj_size``, ``weight_hr_l{k}`` ``(proj_size, H)``; all start ``U(-1/sqrt(H), 1/sqrt(H))``.

    Example:
        >>> rnn = ember.nn.LSTM(4, 3, num_layers=2)
        >>> isinstance(rnn, ember.nn.RNNBase), rnn.mode, len(rnn.all_weights)
        (True, 'LSTM', 2)
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__()
        _check_config(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                      proj_size)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        self._flat_weights_names = []
        self._all_weights = []
        self._make_weights({"device": device, "dtype": dtype})
        self.reset_parameters()

    def _make_weights(self, fk: dict) -> None:
        gate = _GATES[self.mode] * self.hidden_size
        out = self.proj_size or self.hidden_size
        dirs = 2 if self.bidirectional else 1
        for layer in range(self.num_layers):
            in_size = self.input_size if layer == 0 else out * dirs
            for suffix in ("", "_reverse")[:dirs]:
                shapes = [("weight_ih", (gate, in_size)), ("weight_hh", (gate, out))]
                if self.bias:
                    shapes += [("bias_ih", (gate,)), ("bias_hh", (gate,))]
                if self.proj_size > 0:
                    shapes.append(("weight_hr", (self.proj_size, self.hidden_size)))
                names = [f"{kind}_l{layer}{suffix}" for kind, _ in shapes]
                for name, (_, shape) in zip(names, shapes):
                    setattr(self, name, Parameter(empty(shape, **fk)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """No-op kept for torch compatibility (there is no cuDNN weight buffer to compact)."""

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        for name, default in (("num_layers", 1), ("bias", True), ("batch_first", False),
                              ("dropout", 0), ("bidirectional", False)):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        return s

    # -- forward ----------------------------------------------------------------------------
    def _direction_weights(self, layer: int, suffix: str):
        """``(W_ih, b_ih, [W_hh^T, b_hh, W_hr^T])`` with ``b_hh`` folded into ``b_ih``."""
        g = lambda kind: getattr(self, f"{kind}_l{layer}{suffix}")  # noqa: E731
        b_ih = g("bias_ih") if self.bias else None
        b_hh = g("bias_hh") if self.bias else None
        if b_hh is not None and self.mode != "GRU":
            b_ih, b_hh = b_ih + b_hh, None
        w_hr_t = g("weight_hr").t() if self.proj_size > 0 else None
        return g("weight_ih"), b_ih, [g("weight_hh").t(), b_hh, w_hr_t]

    def _layer(self, x: Tensor, states: list, layer: int, sizes):
        """One layer, every direction; ``x`` is ``(T, N, in)`` or packed ``(sum, in)``."""
        step = _STEPS[self.mode]
        outs, finals = [], []
        for d, suffix in enumerate(("", "_reverse")[:2 if self.bidirectional else 1]):
            w_ih, b_ih, weights = self._direction_weights(layer, suffix)
            # the whole sequence's input projection as one 2-D GEMM: (T*N, in) @ (in, G*H)
            gi = F.linear(x.reshape(-1, x.shape[-1]), w_ih, b_ih).reshape(*x.shape[:-1], -1)
            state = states[d]
            if sizes is None:
                seq, final = _scan(step, gi.unbind(0), state, weights, reverse=d == 1)
                outs.append(stack(seq))  # T x (N, H_out) -> (T, N, H_out)
            else:
                scan = _scan_packed_reverse if d == 1 else _scan_packed_forward
                seq, final = scan(step, gi.split(sizes), state, weights, sizes)
                outs.append(cat(seq))  # packed rows, time-major
            finals.append(final)
        return (outs[0] if len(outs) == 1 else cat(outs, -1)), finals

    def _run(self, x: Tensor, hx: tuple, sizes):
        """All layers; ``hx`` is a tuple of ``(L*D, N, *)`` tensors; returns output, states."""
        dirs = 2 if self.bidirectional else 1
        finals = []
        for layer in range(self.num_layers):
            states = [tuple(h[layer * dirs + d] for h in hx) for d in range(dirs)]
            x, layer_finals = self._layer(x, states, layer, sizes)
            finals.extend(layer_finals)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, tuple(stack([f[i] for f in finals]) for i in range(len(hx)))

    def _state_shapes(self, batch: int) -> list[tuple]:
        dirs = 2 if self.bidirectional else 1
        h = (self.num_layers * dirs, batch, self.proj_size or self.hidden_size)
        if self.mode == "LSTM":
            return [h, (self.num_layers * dirs, batch, self.hidden_size)]
        return [h]

    def _check_input(self, input: Tensor, packed: bool) -> None:
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w.dtype}). Convert input: input.to({w.dtype}), or convert "
                             f"model: model.to({input.dtype})")
        expected = 2 if packed else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")

    def _check_hidden(self, hx: tuple, shapes: list) -> None:
        lstm = len(shapes) == 2
        for i, (h, shape) in enumerate(zip(hx, shapes)):
            if tuple(h.shape) != shape:
                what = f"hidden[{i}] size" if lstm else "hidden size"
                raise RuntimeError(f"Expected {what} {shape}, got {list(h.shape)}")

    def _unbatched_hx(self, hx, batched: bool):
        """Validate the user's initial state's rank; give unbatched states a batch dim."""
        want = 3 if batched else 2
        kind = "batched 3-D" if batched else "unbatched 2-D"
        if self.mode == "LSTM":
            if hx[0].dim() != want or hx[1].dim() != want:
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but "
                                   f"got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            return hx if batched else (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        if hx.dim() != want:
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got "
                               f"{hx.dim()}-D tensor")
        return (hx,) if batched else (hx.unsqueeze(1),)

    def forward(self, input, hx=None):
        """Run the recurrence; returns ``(output, h_n)`` (LSTM: ``(output, (h_n, c_n))``).

        Shape: input ``(T, N, H_in)`` (``(N, T, H_in)`` if batch_first, ``(T, H_in)``
        unbatched, or a PackedSequence); hx ``(L*D, N, H_out)`` (LSTM: ``(h_0, c_0)`` with
        ``c_0`` ``(L*D, N, H)``); output ``(T, N, D*H_out)`` (packed if the input was).
        """
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        if input.dim() not in (2, 3):
            name = "RNN" if self.mode.startswith("RNN") else self.mode
            tail = " tensor instead" if name == "RNN" else " instead"
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{tail}")
        batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not batched:
            input = input.unsqueeze(batch_dim)
        self._check_input(input, packed=False)
        if self.batch_first:
            input = input.transpose(0, 1)  # (N, T, H_in) -> (T, N, H_in)
        shapes = self._state_shapes(input.shape[1])
        if hx is None:
            hx = tuple(zeros(s, dtype=input.dtype, device=input.device) for s in shapes)
        else:
            hx = self._unbatched_hx(hx, batched)
        self._check_hidden(hx, shapes)
        out, states = self._run(input, hx, None)
        if self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(batch_dim)
            states = tuple(s.squeeze(1) for s in states)
        return out, (states if self.mode == "LSTM" else states[0])

    def _forward_packed(self, input: PackedSequence, hx):
        data, batch_sizes = input.data, input.batch_sizes
        sizes = [int(b) for b in batch_sizes.tolist()]
        self._check_input(data, packed=True)
        shapes = self._state_shapes(sizes[0])
        if hx is None:
            hx = tuple(zeros(s, dtype=data.dtype, device=data.device) for s in shapes)
        else:
            hx = tuple(hx) if self.mode == "LSTM" else (hx,)
            self._check_hidden(hx, shapes)
            if input.sorted_indices is not None:  # the user's batch order -> sorted order
                hx = tuple(h.index_select(1, input.sorted_indices) for h in hx)
        out, states = self._run(data, hx, sizes)
        if input.unsorted_indices is not None:
            states = tuple(s.index_select(1, input.unsorted_indices) for s in states)
        packed = PackedSequence(out, batch_sizes, input.sorted_indices, input.unsorted_indices)
        return packed, (states if self.mode == "LSTM" else states[0])


def _check_config(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                  proj_size) -> None:
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) \
            or not 0 <= dropout <= 1:
        raise ValueError("dropout should be a number in range [0, 1] representing the "
                         "probability of an element being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                      "non-zero dropout expects num_layers greater than 1, but got "
                      f"dropout={dropout} and num_layers={num_layers}", stacklevel=4)
    for name, value in (("bias", bias), ("batch_first", batch_first)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")
    for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
        if not isinstance(value, int):
            raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
        if value <= 0:
            raise ValueError(f"{name} must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable "
                         "projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")
    if mode not in _GATES:
        raise ValueError("Unrecognized RNN mode: " + mode)


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``, act tanh or relu.

    Example:
        >>> import ember, ember.nn
        >>> rnn = ember.nn.RNN(3, 4, num_layers=2, bidirectional=True)
        >>> out, h = rnn(ember.randn(5, 2, 3))
        >>> tuple(out.shape), tuple(h.shape)
        ((5, 2, 8), (4, 2, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None,
                 **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"RNN.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if nonlinearity not in modes:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(modes[nonlinearity], input_size, hidden_size, num_layers, bias,
                         batch_first, dropout, bidirectional, 0, device, dtype)


class LSTM(RNNBase):
    """Long short-term memory (gates ``i, f, g, o``), optionally projecting ``h`` to proj_size.

    Example:
        >>> import ember, ember.nn
        >>> lstm = ember.nn.LSTM(3, 4, batch_first=True)
        >>> out, (h, c) = lstm(ember.randn(2, 5, 3))
        >>> tuple(out.shape), tuple(h.shape), tuple(c.shape)
        ((2, 5, 4), (1, 2, 4), (1, 2, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit (gates ``r, z, n``; ``n = tanh(W_in x + b_in + r*(W_hn h + b_hn))``).

    Example:
        >>> import ember, ember.nn
        >>> out, h = ember.nn.GRU(3, 4)(ember.randn(5, 2, 3))
        >>> tuple(out.shape), tuple(h.shape)
        ((5, 2, 4), (1, 2, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"GRU.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, device, dtype)


# -- cells ------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """One time step's parameters: ``weight_ih`` ``(G*H, in)``, ``weight_hh`` ``(G*H, H)``,
    ``bias_ih``/``bias_hh`` ``(G*H,)``, all ``U(-1/sqrt(H), 1/sqrt(H))`` as torch.

    Example:
        >>> cell = ember.nn.GRUCell(4, 3)
        >>> isinstance(cell, ember.nn.RNNCellBase), cell(ember.randn(2, 4)).shape
        (True, ember.Size([2, 3]))
    """

    _name = "RNNCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty(num_chunks * hidden_size, input_size, **fk))
        self.weight_hh = Parameter(empty(num_chunks * hidden_size, hidden_size, **fk))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **fk))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **fk))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, input: Tensor, hx: tuple | None, n_states: int):
        """Check ranks and sizes; give unbatched tensors a batch dim; default zero states."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{self._name}: Expected input to be 1D or 2D, got "
                             f"{input.dim()}D instead")
        for i, h in enumerate(hx or ()):
            if h.dim() not in (1, 2):
                what = f"hx[{i}]" if n_states == 2 else "hidden"
                raise ValueError(f"{self._name}: Expected {what} to be 1D or 2D, got "
                                 f"{h.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
            hx = tuple(h.unsqueeze(0) for h in hx) if hx is not None else None
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} "
                               f"expected {self.input_size}")
        if hx is None:
            shape = (input.shape[0], self.hidden_size)
            hx = tuple(zeros(shape, dtype=input.dtype, device=input.device)
                       for _ in range(n_states))
        for i, h in enumerate(hx):
            if tuple(h.shape) != (input.shape[0], self.hidden_size):
                raise RuntimeError(f"hidden{i} has inconsistent hidden size: got "
                                   f"{list(h.shape)}, expected "
                                   f"{[input.shape[0], self.hidden_size]}")
        return input, hx, batched

    def _cell(self, step, input: Tensor, hx: tuple, n_states: int):
        input, hx, batched = self._prepare(input, hx, n_states)
        gi = F.linear(input, self.weight_ih, self.bias_ih)  # (N, G*H)
        b_hh = self.bias_hh
        if b_hh is not None and step is not _gru_step:
            gi, b_hh = gi + b_hh, None
        state = step(gi, hx, self.weight_hh.t(), b_hh, None)
        return state if batched else tuple(s.squeeze(0) for s in state)


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Shape: input ``(N, in)`` or ``(in,)``, hx same batch with ``hidden_size``; returns h'.

    Example:
        >>> import ember, ember.nn
        >>> ember.nn.RNNCell(3, 4)(ember.randn(2, 3)).shape
        ember.Size([2, 4])
    """

    _name = "RNNCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        steps = {"tanh": _tanh_step, "relu": _relu_step}
        if self.nonlinearity not in steps:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        hx = None if hx is None else (hx,)
        return self._cell(steps[self.nonlinearity], input, hx, 1)[0]


class LSTMCell(RNNCellBase):
    """One LSTM step; returns ``(h', c')``.

    Example:
        >>> import ember, ember.nn
        >>> h, c = ember.nn.LSTMCell(3, 4)(ember.randn(2, 3))
        >>> tuple(h.shape), tuple(c.shape)
        ((2, 4), (2, 4))
    """

    _name = "LSTMCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple[Tensor, Tensor]:
        return self._cell(_lstm_step, input, None if hx is None else tuple(hx), 2)


class GRUCell(RNNCellBase):
    """One GRU step; returns h'.

    Example:
        >>> import ember, ember.nn
        >>> ember.nn.GRUCell(3, 4)(ember.randn(3)).shape
        ember.Size([4])
    """

    _name = "GRUCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        hx = None if hx is None else (hx,)
        return self._cell(_gru_step, input, hx, 1)[0]
