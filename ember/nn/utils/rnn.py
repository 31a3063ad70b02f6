"""Variable-length sequences: ``pad_sequence``, ``PackedSequence`` and (un)packing.

A PackedSequence stores time step after time step: ``data`` rows ``[t0 of every sequence,
t1 of every sequence still running, ...]`` and ``batch_sizes[t]``, the number of sequences
longer than ``t``. Packing and unpacking are built from differentiable ops (slicing, ``cat``),
so gradients flow through them.
"""

from __future__ import annotations

from collections import namedtuple

from ember.core import dtype as dt
from ember.ops.creation import arange, as_tensor, full, tensor
from ember.ops.shape import cat, stack
from ember.tensor import Tensor

__all__ = ["PackedSequence", "pad_sequence", "unpad_sequence", "pack_padded_sequence",
           "pad_packed_sequence", "pack_sequence", "unpack_sequence", "invert_permutation"]


class PackedSequence(namedtuple("PackedSequence",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """A batch of variable-length sequences packed time-major (see the module docstring).

    Example:
        >>> from ember.nn.utils.rnn import pack_sequence
        >>> packed = pack_sequence([ember.tensor([1, 2, 3]), ember.tensor([4, 5])])
        >>> packed.data, packed.batch_sizes
        (tensor([1, 4, 2, 5, 3]), tensor([2, 2, 1]))
    """

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """The same packing with ``data`` converted by ``Tensor.to``."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else type(self)(data, self.batch_sizes,
                                                         self.sorted_indices,
                                                         self.unsorted_indices)

    @property
    def is_cuda(self) -> bool:
        return self.data.device.type == "cuda"


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of an index permutation (None stays None).

    Example:
        >>> from ember.nn.utils.rnn import invert_permutation
        >>> invert_permutation(ember.tensor([2, 0, 1]))
        tensor([1, 2, 0])
    """
    if permutation is None:
        return None
    out = permutation.new_empty(permutation.shape)
    out.scatter_(0, permutation, arange(permutation.numel(), dtype=permutation.dtype))
    return out


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack ``(L_i, *)`` tensors into ``(T, B, *)`` (``(B, T, *)`` if batch_first), padded.

    Example:
        >>> import ember
        >>> from ember.nn.utils.rnn import pad_sequence
        >>> pad_sequence([ember.ones(2), ember.ones(1)], batch_first=True).tolist()
        [[1.0, 1.0], [1.0, 0.0]]
    """
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        pad = full((longest - s.shape[0], *s.shape[1:]), padding_value, dtype=s.dtype)
        rows.append(cat([s, pad]) if padding_side == "right" else cat([pad, s]))
    return stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False):
    """Split a padded batch back into a list of its sequences.

    Example:
        >>> from ember.nn.utils.rnn import unpad_sequence
        >>> padded = ember.tensor([[1, 2, 3], [4, 5, 0]])
        >>> unpad_sequence(padded, ember.tensor([3, 2]), batch_first=True)
        [tensor([1, 2, 3]), tensor([4, 5])]
    """
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :int(n)] for i, n in enumerate(_lengths_list(lengths))]


def _lengths_list(lengths) -> list[int]:
    if isinstance(lengths, Tensor):
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded ``(T, B, *)`` batch (``(B, T, *)`` if batch_first) given each length.

    Example:
        >>> from ember.nn.utils.rnn import pack_padded_sequence
        >>> padded = ember.tensor([[1, 2, 3], [4, 5, 0]])
        >>> packed = pack_padded_sequence(padded, [3, 2], batch_first=True)
        >>> packed.data, packed.batch_sizes
        (tensor([1, 4, 2, 5, 3]), tensor([2, 2, 1]))
    """
    lens = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = sorted(range(len(lens)), key=lambda i: -lens[i])
        sorted_indices = tensor(order, dtype=dt.int64)
        lens = [lens[i] for i in order]
        input = input.index_select(batch_dim, sorted_indices)
    if lens and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if batch_first:
        input = input.transpose(0, 1)  # (B, T, *) -> (T, B, *)
    if lens and lens[0] > input.shape[0]:
        raise RuntimeError(f"Expected sequence length to be at most {input.shape[0]}; got "
                           f"{lens[0]}")
    sizes = [sum(1 for n in lens if n > t) for t in range(lens[0] if lens else 0)]
    data = cat([input[t, :b] for t, b in enumerate(sizes)])
    return PackedSequence(data, tensor(sizes, dtype=dt.int64), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):
    """Inverse of :func:`pack_padded_sequence`: ``(padded, lengths)``.

    Example:
        >>> from ember.nn.utils.rnn import pack_sequence, pad_packed_sequence
        >>> packed = pack_sequence([ember.tensor([1, 2, 3]), ember.tensor([4, 5])])
        >>> pad_packed_sequence(packed, batch_first=True)
        (tensor([[1, 2, 3],
                [4, 5, 0]]), tensor([3, 2]))
    """
    sizes = [int(b) for b in sequence.batch_sizes.tolist()]
    steps = len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
        steps = total_length
    data = sequence.data
    batch = sizes[0] if sizes else 0
    feat = tuple(data.shape[1:])
    rows, offset = [], 0
    for b in sizes:
        pad = full((batch - b, *feat), padding_value, dtype=data.dtype)
        rows.append(cat([data[offset:offset + b], pad]))
        offset += b
    for _ in range(steps - len(sizes)):
        rows.append(full((batch, *feat), padding_value, dtype=data.dtype))
    padded = stack(rows)  # (T, B, *)
    lengths = tensor([sum(1 for s in sizes if s > i) for i in range(batch)], dtype=dt.int64)
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths.index_select(0, sequence.unsorted_indices)
    return padded, lengths


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of ``(L_i, *)`` tensors.

    Example:
        >>> from ember.nn.utils.rnn import pack_sequence
        >>> seqs = [ember.tensor([4, 5]), ember.tensor([1, 2, 3])]
        >>> packed = pack_sequence(seqs, enforce_sorted=False)
        >>> packed.data, packed.sorted_indices
        (tensor([1, 4, 2, 5, 3]), tensor([1, 0]))
    """
    lengths = as_tensor([s.shape[0] for s in sequences], dtype=dt.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """Inverse of :func:`pack_sequence`.

    Example:
        >>> from ember.nn.utils.rnn import pack_sequence, unpack_sequence
        >>> unpack_sequence(pack_sequence([ember.tensor([1, 2, 3]), ember.tensor([4, 5])]))
        [tensor([1, 2, 3]), tensor([4, 5])]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
