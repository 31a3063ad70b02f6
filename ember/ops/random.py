"""Random operators: factories (rand, randn, randint, randperm, normal), sampling from tensors
(normal, bernoulli, multinomial) and the in-place ``Tensor`` fills (uniform_, normal_, ...).

Each op takes ``generator=`` (the default generator when None) and draws from its Philox
stream (NOTE [Philox streams] in ember/tensor/random.py). The Meta rules here validate
arguments and predict shapes; they never draw, so meta tensors leave every generator's offset
alone. Checks that need data (negative probabilities, negative std elements) run in kernels.
CPU kernels live in ember/backends/cpu/random.py.
"""

from __future__ import annotations

from ember.core import dtype as dt
from ember.core.layout import broadcast_shapes, expand_geometry, numel
from ember.ops._define import Spec, Tag, composite, derivative, operator, tensor_method
from ember.ops.creation import _FACTORY_KW, _shape_arg, factory
from ember.ops.pointwise import _TN, check_writable
from ember.tensor import Tensor
from ember.tensor.random import (
    Generator,
    default_generator,
    fork_rng,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = ["rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
           "normal", "bernoulli", "multinomial", "Generator", "default_generator",
           "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng"]

_GEN = "Generator? generator=None"
_R = (Tag.random,)
_RI = (Tag.random, Tag.inplace)

# C type names torch uses in its integer bounds messages
_CNAME = {"uint8": "unsigned char", "int8": "signed char", "int16": "short", "int32": "int",
          "int64": "long", "bool": "bool"}


# -- shared checks -------------------------------------------------------------------------
def require_float(op: str, dtype: dt.DType, shape: tuple = (1,)) -> None:
    """NotImplementedError (torch's dispatch-macro error) unless ``dtype`` is floating.

    Like torch, an empty result runs no kernel and so is never refused.
    """
    if not dtype.is_floating_point and numel(shape):
        raise NotImplementedError(f"{op}: not implemented for '{_TN[dtype.name]}'; expected a "
                                  "floating point dtype")


def int_bounds(dtype: dt.DType) -> tuple[int, int]:
    """Inclusive range of integers a dtype holds exactly (floats: +-2**significand bits)."""
    if dtype is dt.bool_:
        return 0, 1
    if dtype.is_floating_point:
        m = _MANTISSA[dtype.name]
        return -(1 << m), 1 << m
    info = dt.iinfo(dtype)
    return int(info.min), int(info.max)


_MANTISSA = {"float32": 24, "float64": 53, "float16": 11, "bfloat16": 8}


def _no_kernel(kernel: str, dtype: dt.DType) -> NotImplementedError:
    """torch's error for a random kernel without ``dtype`` (complex ones)."""
    return NotImplementedError(f"\"{kernel}\" not implemented for '{_TN[dtype.name]}'")


def check_range(op: str, low: int, high: int, dtype: dt.DType) -> None:
    """torch's ``random_``/``randint`` bounds rules for ``[low, high)`` in ``dtype``."""
    if dtype.is_complex:
        raise RuntimeError("check_random_bounds handles only integral, floating-point and "
                           "boolean types")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    if dtype.is_floating_point:
        return
    lo, hi = int_bounds(dtype)
    if not lo <= low <= hi:
        raise RuntimeError(f"{op}: from is out of bounds for {_CNAME[dtype.name]}; got "
                           f"from={low}, expected [{lo}, {hi}]")
    if not lo <= high - 1 <= hi:
        raise RuntimeError(f"{op}: to - 1 is out of bounds for {_CNAME[dtype.name]}; got "
                           f"to={high}, expected to - 1 in [{lo}, {hi}]")


def _float_spec(op: str, size, dtype, out, *, star_size: bool = True,
                always: bool = False) -> Spec:
    if star_size and not size:
        raise TypeError(f"{op}() missing required argument 'size'; pass () for a 0-d tensor")
    dtype = dtype or (out._dtype if out is not None else dt.get_default_dtype())
    shape = _shape_arg(size)
    require_float(op, dtype.to_real(), (1,) if always else shape)  # complex: real parts' dtype
    return Spec(shape, dtype)


def _scalar(x):
    return x.item() if isinstance(x, Tensor) else x


# -- factories -----------------------------------------------------------------------------
@factory("rand(SymInt[] size, *, " + _GEN + _FACTORY_KW + ", Tensor(a!)? out=None) -> Tensor",
         _R)
def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
         pin_memory=None, requires_grad=False):
    """Uniform samples in [0, 1) of ``size`` (floating dtypes only), like ``torch.rand``.

    Raises:
        NotImplementedError: a non-floating ``dtype``.

    Example:
        >>> import ember
        >>> ember.rand(2, 3, generator=ember.Generator().manual_seed(0)).shape
        ember.Size([2, 3])
    """
    return _float_spec("rand", size, dtype, out, always=True)  # torch checks bounds eagerly


@factory("randn(SymInt[] size, *, " + _GEN + _FACTORY_KW + ", Tensor(a!)? out=None) -> Tensor",
         _R)
def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          pin_memory=None, requires_grad=False):
    """Standard normal samples of ``size`` (floating dtypes only), like ``torch.randn``.

    Example:
        >>> import ember
        >>> ember.randn(4, dtype=ember.float64).dtype
        ember.float64
    """
    return _float_spec("randn", size, dtype, out)


def randint_args(low, high, size) -> tuple[int, int, tuple]:
    """Normalise torch's ``randint(high, size)`` / ``randint(low, high, size)`` forms."""
    if size is None:
        if high is None:
            raise TypeError("randint() missing required argument 'size'")
        size, high, low = high, low, 0
    elif high is None:
        high, low = low, 0
    if low is None:
        low = 0
    if high is None:
        raise TypeError("randint() missing required argument 'high'")
    return int(_scalar(low)), int(_scalar(high)), _shape_arg(size)


@factory("randint.low(SymInt low, SymInt high, SymInt[] size, *, " + _GEN + _FACTORY_KW +
         ", Tensor(a!)? out=None) -> Tensor", _R)
def randint(low=None, high=None, size=None, *, generator=None, out=None, dtype=None,
            layout=None, device=None, pin_memory=None, requires_grad=False):
    """Integers uniform in ``[low, high)`` (``low`` defaults to 0), int64 unless ``dtype``.

    Accepts ``randint(high, size)`` and ``randint(low, high, size)`` like ``torch.randint``.

    Raises:
        RuntimeError: ``low >= high``, or bounds outside ``dtype``'s range.

    Example:
        >>> import ember
        >>> x = ember.randint(3, 10, (5,))
        >>> bool(((x >= 3) & (x < 10)).all()), x.dtype
        (True, ember.int64)
    """
    low, high, shape = randint_args(low, high, size)
    dtype = dtype or (out._dtype if out is not None else dt.int64)
    check_range("randint", low, high, dtype)
    return Spec(shape, dtype)


randint.normalize = randint_args


@factory("randperm(SymInt n, *, " + _GEN + _FACTORY_KW.replace("dtype=None", "dtype=long") +
         ", Tensor(a!)? out=None) -> Tensor", _R)
def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             pin_memory=None, requires_grad=False):
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype``), like ``torch.randperm``.

    Raises:
        RuntimeError: negative ``n``, or ``n`` too large for ``dtype``.
        NotImplementedError: ``dtype=bool``.

    Example:
        >>> import ember
        >>> sorted(ember.randperm(4).tolist())
        [0, 1, 2, 3]
    """
    shape = _shape_arg((n,))
    dtype = dtype or (out._dtype if out is not None else dt.int64)
    if dtype is dt.bool_:
        raise NotImplementedError("randperm: not implemented for 'Bool'")
    if dtype.is_complex:
        raise _no_kernel("randperm", dtype)
    if n and n - 1 > int_bounds(dtype)[1]:
        raise RuntimeError(f"randperm: n={n} is too large for dtype {dtype}; expected n - 1 <= "
                           f"{int_bounds(dtype)[1]}")
    return Spec(shape, dtype)


@factory("normal.float_float(float mean, float std, SymInt[] size, *, " + _GEN + _FACTORY_KW +
         ", Tensor(a!)? out=None) -> Tensor", _R)
def normal_float_float(mean, std, size, *, generator=None, out=None, dtype=None, layout=None,
                       device=None, pin_memory=None, requires_grad=False):
    """Normal samples of ``size`` with scalar ``mean`` and ``std``."""
    check_std("normal", std)
    return _float_spec("normal", size, dtype, out, star_size=False)


def check_std(op: str, std, strict: bool = False) -> None:
    """RuntimeError for a negative (``strict``: non-positive) scalar standard deviation."""
    if std < 0 or (strict and std == 0):
        cmp = ">" if strict else ">="
        raise RuntimeError(f"{op} expects std {cmp} 0.0, but found std {std}")


# -- normal from tensors ---------------------------------------------------------------------
@operator("normal.Tensor_Tensor(Tensor mean, Tensor std, *, " + _GEN +
          ", Tensor(a!)? out=None) -> Tensor", _R, method=False)
def normal_tensor_tensor(mean, std, *, generator=None, out=None):
    """Normal samples with elementwise ``mean`` and ``std`` (broadcast); ``mean``'s dtype."""
    _real_std(std)
    shape = broadcast_shapes(mean._shape, std._shape)
    return _normal_spec(shape, mean._dtype, out)


def _normal_spec(shape: tuple, dtype: dt.DType, out) -> Spec:
    """normal's result: ``shape``, the dtype of ``out`` when given (torch samples straight into
    it), else ``dtype``; floating only."""
    dtype = out._dtype if out is not None else dtype
    if not dtype.is_complex:  # complex means: complex samples (torch's normal_ of the output)
        require_float("normal", dtype, shape)
    return Spec(shape, dtype)


@operator("normal.Tensor_float(Tensor mean, float std=1, *, " + _GEN +
          ", Tensor(a!)? out=None) -> Tensor", _R, method=False)
def normal_tensor_float(mean, std=1.0, *, generator=None, out=None):
    """Normal samples with elementwise ``mean`` and a scalar ``std``."""
    check_std("normal", std)
    return _normal_spec(mean._shape, mean._dtype, out)


@operator("normal.float_Tensor(float mean, Tensor std, *, " + _GEN +
          ", Tensor(a!)? out=None) -> Tensor", _R, method=False)
def normal_float_tensor(mean, std, *, generator=None, out=None):
    """Normal samples with a scalar ``mean`` and elementwise ``std``."""
    _real_std(std)
    return _normal_spec(std._shape, std._dtype, out)


def _real_std(std: Tensor) -> None:
    if std._dtype.is_complex:
        raise RuntimeError("normal expects standard deviation to be non-complex")


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, pin_memory=None, requires_grad=False) -> Tensor:
    """Samples from normal distributions (``torch.normal``'s four overloads).

    ``mean`` and ``std`` are tensors (broadcast; the result has ``mean``'s dtype, or ``std``'s
    when ``mean`` is a number) or numbers; with two numbers, ``size`` gives the shape.

    Raises:
        RuntimeError: a negative ``std`` (elements of a ``std`` tensor are checked on CPU).
        NotImplementedError: integer tensors.

    Example:
        >>> import ember
        >>> ember.normal(ember.zeros(3), 1.0).shape, ember.normal(2.0, 3.0, (2,)).shape
        (ember.Size([3]), ember.Size([2]))
    """
    m_t, s_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if m_t and s_t:
        return normal_tensor_tensor(mean, std, generator=generator, out=out)
    if m_t:
        return normal_tensor_float(mean, std, generator=generator, out=out)
    if s_t:
        return normal_float_tensor(mean, std, generator=generator, out=out)
    if size is None:
        raise TypeError("normal(): with a number for both mean and std, size is required; got "
                        "size=None")
    return normal_float_float(mean, std, size, generator=generator, out=out, dtype=dtype,
                              layout=layout, device=device, pin_memory=pin_memory,
                              requires_grad=requires_grad)


# -- *_like ----------------------------------------------------------------------------------
def _like(input: Tensor, dtype, device, requires_grad, generator) -> dict:
    return {"dtype": dtype or input._dtype, "device": device or input._device,
            "requires_grad": requires_grad, "generator": generator}


@composite("rand_like(Tensor self, *, " + _GEN + _FACTORY_KW +
           ", MemoryFormat? memory_format=None) -> Tensor", method=False, tags=_R)
def rand_like(input, *, generator=None, dtype=None, layout=None, device=None,
              pin_memory=None, requires_grad=False, memory_format=None) -> Tensor:
    """Uniform [0, 1) samples shaped like ``input`` (its dtype and device unless given).

    Example:
        >>> x = ember.rand_like(ember.zeros(2, 3, dtype=ember.float64))
        >>> x.shape, x.dtype, bool(((x >= 0) & (x < 1)).all())
        (ember.Size([2, 3]), ember.float64, True)
    """
    return rand(input._shape, **_like(input, dtype, device, requires_grad, generator))


@composite("randn_like(Tensor self, *, " + _GEN + _FACTORY_KW +
           ", MemoryFormat? memory_format=None) -> Tensor", method=False, tags=_R)
def randn_like(input, *, generator=None, dtype=None, layout=None, device=None,
               pin_memory=None, requires_grad=False, memory_format=None) -> Tensor:
    """Standard normal samples shaped like ``input``.

    Example:
        >>> x = ember.randn_like(ember.zeros(2, 3))
        >>> x.shape, x.dtype
        (ember.Size([2, 3]), ember.float32)
    """
    return randn(input._shape, **_like(input, dtype, device, requires_grad, generator))


@composite("randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, " + _GEN +
           _FACTORY_KW + ", MemoryFormat? memory_format=None) -> Tensor", method=False, tags=_R)
def randint_like(input, low=None, high=None, *, generator=None, dtype=None, layout=None,
                 device=None, pin_memory=None, requires_grad=False,
                 memory_format=None) -> Tensor:
    """Integers in ``[low, high)`` shaped like ``input`` (``randint_like(input, high)`` too).

    Example:
        >>> x = ember.randint_like(ember.zeros(4, dtype=ember.int32), 5, 10)
        >>> x.dtype, bool(((x >= 5) & (x < 10)).all())
        (ember.int32, True)
    """
    if high is None:
        low, high = 0, low
    return randint(0 if low is None else low, high, input._shape,
                   **_like(input, dtype, device, requires_grad, generator))


# -- bernoulli and multinomial ---------------------------------------------------------------
@operator("bernoulli(Tensor self, *, " + _GEN + ", Tensor(a!)? out=None) -> Tensor", _R,
          method=False)
def bernoulli_tensor(input, *, generator=None, out=None):
    """0/1 samples with probabilities ``input`` (floating), in ``input``'s dtype."""
    if input._dtype.is_complex and input.numel():
        raise _no_kernel("bernoulli_tensor_cpu_self_", input._dtype)
    require_float("bernoulli", input._dtype, input._shape)
    return Spec(input._shape, input._dtype)


@operator("bernoulli.p(Tensor self, float p, *, " + _GEN + ") -> Tensor", _R, method=False)
def bernoulli_p(input, p, *, generator=None):
    """0/1 samples with one probability ``p``, shaped like ``input`` (its dtype)."""
    check_p("bernoulli_", p)
    if input._dtype.is_complex and input.numel():
        raise _no_kernel("bernoulli_scalar_cpu_", input._dtype)
    return Spec(input._shape, input._dtype)


def check_p(op: str, p) -> None:
    """RuntimeError unless ``0 <= p <= 1``."""
    if not 0 <= p <= 1:
        raise RuntimeError(f"{op} expects p to be in [0, 1], but got p={p}")


@tensor_method("bernoulli")
def bernoulli(input, p=None, *, generator=None, out=None) -> Tensor:
    """Bernoulli samples: probabilities from ``input``, or the single probability ``p``.

    Raises:
        RuntimeError: probabilities outside [0, 1].
        NotImplementedError: integer ``input`` without ``p``.

    Example:
        >>> import ember
        >>> ember.bernoulli(ember.tensor([0.0, 1.0])).tolist()
        [0.0, 1.0]
    """
    if p is None:
        return bernoulli_tensor(input, generator=generator, out=out)
    return bernoulli_p(input, p, generator=generator)


@operator("multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, " + _GEN +
          ", Tensor(a!)? out=None) -> Tensor", _R)
def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Category indices sampled from the rows of ``input`` (unnormalised probabilities).

    Shape: ``(C,) -> (num_samples,)``; ``(N, C) -> (N, num_samples)``; int64.

    Raises:
        RuntimeError: ``input`` not 1-d/2-d, ``num_samples <= 0``, more samples than
            categories without replacement; on CPU also negative/inf/nan probabilities or a
            row summing to zero.

    Example:
        >>> import ember
        >>> ember.multinomial(ember.tensor([0.0, 1.0]), 3, True).tolist()
        [1, 1, 1]
    """
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim; got {input.ndim} dims")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_TN[input._dtype.name]}")
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples; got "
                           f"{num_samples}")
    n_cat = input._shape[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError(f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples "
                           f"without replacement; got {num_samples} > {n_cat}")
    if n_cat > 1 << 24:
        raise RuntimeError(f"multinomial: number of categories cannot exceed 2^24; got {n_cat}")
    return Spec((*input._shape[:-1], num_samples), dt.int64)


# -- in-place fills --------------------------------------------------------------------------
def _inplace(schema: str, method: str | None = True):
    return operator(schema, _RI, method=method)


def _self_spec(self: Tensor) -> Spec:
    if numel(self._shape):  # torch lets an empty expanded tensor through
        check_writable(self)
    return Spec(self._shape, self._dtype)


@_inplace("uniform_(Tensor(a!) self, float from=0, float to=1, *, " + _GEN +
          ") -> Tensor(a!)")
def uniform_(self, from_=0.0, to=1.0, *, generator=None):
    """Fill ``self`` with samples uniform in ``[from_, to)``; floating dtypes, and complex
    ones (each part uniform, as torch).

    Raises:
        RuntimeError: ``from_ > to``.

    Example:
        >>> x = ember.empty(1000).uniform_(-2.0, 2.0)
        >>> bool((x >= -2).all() and (x < 2).all())
        True
    """
    if not self._dtype.is_complex:  # complex: each part uniform (torch's view_as_real)
        require_float("uniform_", self._dtype)  # torch checks bounds before the size
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={from_} > to={to}")
    return _self_spec(self)


@_inplace("normal_(Tensor(a!) self, float mean=0, float std=1, *, " + _GEN + ") -> Tensor(a!)")
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill ``self`` with normal samples of ``mean`` and ``std``; floating dtypes, and complex
    ones (each part ``N(mean, std^2 / 2)``, as torch).

    Example:
        >>> x = ember.empty(100, 100).normal_(mean=3.0, std=0.5)
        >>> round(x.mean().item(), 1), round(x.std().item(), 1)
        (3.0, 0.5)
    """
    if not self._dtype.is_complex:  # complex: each part N(mean, std^2 / 2), as torch
        require_float("normal_", self._dtype, self._shape)
    check_std("normal", std)
    return _self_spec(self)


@_inplace("exponential_(Tensor(a!) self, float lambd=1, *, " + _GEN + ") -> Tensor(a!)")
def exponential_(self, lambd=1.0, *, generator=None):
    """Fill ``self`` with exponential samples of rate ``lambd`` (> 0); floating dtypes only.

    Example:
        >>> x = ember.empty(1000).exponential_(lambd=2.0)
        >>> bool((x >= 0).all())
        True
    """
    if not self._dtype.is_floating_point and self.numel():
        raise RuntimeError(f"Exponential distribution is a continuous probability distribution."
                           f" dtype must be a floating point but you specified "
                           f"{_TN[self._dtype.name]}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _self_spec(self)


@_inplace("geometric_(Tensor(a!) self, float p, *, " + _GEN + ") -> Tensor(a!)")
def geometric_(self, p, *, generator=None):
    """Fill ``self`` with geometric samples (trials until the first success, ``>= 1``).

    Example:
        >>> x = ember.empty(1000).geometric_(0.5)
        >>> bool((x >= 1).all()), bool((x == x.round()).all())  # trials until the first success
        (True, True)
    """
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if self._dtype is dt.bool_ and self.numel():
        raise NotImplementedError("geometric_: not implemented for 'Bool'")
    if self._dtype.is_complex and self.numel():
        raise _no_kernel("geometric_cpu", self._dtype)
    return _self_spec(self)


@_inplace("cauchy_(Tensor(a!) self, float median=0, float sigma=1, *, " + _GEN +
          ") -> Tensor(a!)")
def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill ``self`` with Cauchy samples of ``median`` and scale ``sigma`` (> 0).

    Example:
        >>> ember.empty(3).cauchy_(median=0.0, sigma=1.0).shape
        ember.Size([3])
    """
    if not self._dtype.is_floating_point:
        raise RuntimeError(f"Cauchy distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{_TN[self._dtype.name]}")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    return _self_spec(self)


@_inplace("log_normal_(Tensor(a!) self, float mean=1, float std=2, *, " + _GEN +
          ") -> Tensor(a!)")
def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill ``self`` with ``exp`` of normal samples of ``mean`` and ``std`` (> 0).

    Example:
        >>> x = ember.empty(1000).log_normal_(mean=0.0, std=1.0)
        >>> bool((x > 0).all())
        True
    """
    require_float("log_normal_", self._dtype, self._shape)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return _self_spec(self)


@_inplace("bernoulli_.float(Tensor(a!) self, float p=0.5, *, " + _GEN + ") -> Tensor(a!)",
          method=None)
def bernoulli_float_(self, p=0.5, *, generator=None):
    """Fill ``self`` with 0/1 samples of probability ``p``."""
    check_p("bernoulli_", p)
    if self._dtype.is_complex and self.numel():
        raise _no_kernel("bernoulli_scalar_cpu_", self._dtype)
    return _self_spec(self)


@_inplace("bernoulli_.Tensor(Tensor(a!) self, Tensor p, *, " + _GEN + ") -> Tensor(a!)",
          method=None)
def bernoulli_tensor_(self, p, *, generator=None):
    """Fill ``self`` with 0/1 samples of elementwise probabilities ``p`` (broadcast to self)."""
    if self._dtype.is_complex and self.numel():
        raise _no_kernel("bernoulli_tensor_cpu_self_", self._dtype)
    require_float("bernoulli_", p._dtype, self._shape)
    expand_geometry(p._shape, p._stride, self._shape)  # raises like expand when p doesn't fit
    return _self_spec(self)


@tensor_method("bernoulli_")
def bernoulli_(self, p=0.5, *, generator=None) -> Tensor:
    """In-place Bernoulli samples with probability ``p`` (a number or a tensor).

    Example:
        >>> x = ember.empty(1000).bernoulli_(0.25)
        >>> sorted(set(x.tolist())), ember.empty(2).bernoulli_(1.0)
        ([0.0, 1.0], tensor([1., 1.]))
    """
    if isinstance(p, Tensor):
        return bernoulli_tensor_(self, p, generator=generator)
    return bernoulli_float_(self, p, generator=generator)


@_inplace("random_.from(Tensor(a!) self, int from, int? to, *, " + _GEN + ") -> Tensor(a!)",
          method=None)
def random_from_(self, from_, to, *, generator=None):
    """Fill ``self`` with integers in ``[from_, to)`` (``to=None``: up to the dtype's max)."""
    random_bounds(self._dtype, from_, to, numel(self._shape))
    return _self_spec(self)


def random_bounds(dtype: dt.DType, from_=None, to=None, count: int = 1) -> tuple[int, int]:
    """The half-open range ``random_`` samples for ``dtype`` (torch's defaults), checked.

    No bounds: ``[0, 2**significand]`` for floats, ``[0, max]`` for integers, both inclusive.
    """
    if dtype.is_complex and from_ is None and to is None:
        if not count:  # torch's kernel is never reached for an empty tensor
            return 0, 1
        raise _no_kernel("random_kernel_cpu", dtype)
    if dtype.is_complex:
        check_range("random_", 0, 1, dtype)
    lo, hi = int_bounds(dtype)
    from_ = 0 if from_ is None else int(from_)
    if to is None:
        if from_ > hi:
            raise RuntimeError(f"random_: from is out of bounds for "
                               f"{_CNAME.get(dtype.name, dtype.name)}; got from={from_}")
        to = hi + 1
    check_range("random_", from_, int(to), dtype)
    return from_, int(to)


@tensor_method("random_")
def random_(self, *bounds, generator=None, **kw) -> Tensor:
    """Fill ``self`` with random integers: ``random_()``, ``random_(to)``, ``random_(from, to)``.

    Defaults: ``[0, 2**significand]`` for floating dtypes, ``[0, max]`` for integer ones.

    Raises:
        RuntimeError: ``from >= to`` or bounds outside the dtype's range.

    Example:
        >>> import ember
        >>> x = ember.zeros(4).random_(3)
        >>> bool(((x >= 0) & (x < 3)).all())
        True
    """
    if len(bounds) == 1 and not kw:
        return random_from_(self, 0, bounds[0], generator=generator)
    if len(bounds) > 2 or (len(bounds) + len(kw) > 2):
        raise TypeError(f"random_() takes at most 2 bounds; got {len(bounds) + len(kw)}")
    from_, to = (list(bounds) + [None, None])[:2]
    from_ = kw.pop("from", from_)
    to = kw.pop("to", to)
    if kw:
        raise TypeError(f"random_() got unexpected keyword arguments {sorted(kw)}")
    return random_from_(self, from_, to, generator=generator)


# -- derivatives ---------------------------------------------------------------------------------
def _no_gradient(ctx, *grads):
    """Random draws carry no gradient to their parameters or to overwritten values (as torch:
    the outputs require grad, the gradients are zero)."""
    return (None,) * len(ctx.needs_input_grad)


# bernoulli.p has no formula in torch either: its backward raises "not implemented".
for _op in (normal_tensor_tensor, normal_tensor_float, normal_float_tensor, bernoulli_tensor,
            uniform_, normal_, exponential_, geometric_, cauchy_, log_normal_,
            bernoulli_float_, bernoulli_tensor_, random_from_):
    derivative(_op)(_no_gradient)
