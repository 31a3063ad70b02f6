"""``assert_close``: compare tensors, scalars and nested containers with per-dtype tolerances.

Mirrors ``torch.testing.assert_close``: attributes first (shape, device, dtype, optionally
strides), then values with ``|actual - expected| <= atol + rtol * |expected|``; infinities must
match exactly and NaNs only when ``equal_nan``. A mismatch raises ``AssertionError`` whose
message counts the mismatched elements and names the greatest absolute and relative difference
and where they occur.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ember.core import dtype as dt
from ember.tensor import Tensor, from_numpy, numpy_view

__all__ = ["assert_close", "default_tolerances"]

# (rtol, atol) per dtype, torch.testing's defaults; exact comparison for everything else.
_TOLERANCES = {
    dt.float16: (1e-3, 1e-5),
    dt.bfloat16: (1.6e-2, 1e-5),
    dt.float32: (1.3e-6, 1e-5),
    dt.float64: (1e-7, 1e-7),
    dt.complex64: (1.3e-6, 1e-5),
    dt.complex128: (1e-7, 1e-7),
}
_SCALAR_TYPES = (bool, int, float, np.number, np.bool_)


def default_tolerances(*dtypes: dt.DType) -> tuple[float, float]:
    """The loosest ``(rtol, atol)`` among ``dtypes`` (``(0, 0)`` for integral and bool).

    Example:
        >>> from ember.testing import default_tolerances
        >>> default_tolerances(ember.float32), default_tolerances(ember.int64)
        ((1.3e-06, 1e-05), (0.0, 0.0))
        >>> default_tolerances(ember.float32, ember.bfloat16)
        (0.016, 1e-05)
    """
    pairs = [_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


class _Mismatch(AssertionError):
    """A failed comparison; ``path`` says where inside nested containers it occurred."""

    def __init__(self, message: str, path: str = ""):
        super().__init__(message)
        self.message, self.path = message, path


def assert_close(actual, expected, *, rtol: float | None = None, atol: float | None = None,
                 equal_nan: bool = False, check_device: bool = True, check_dtype: bool = True,
                 check_stride: bool = False, msg: str | Callable[[str], str] | None = None
                 ) -> None:
    """Assert that ``actual`` and ``expected`` are close (``torch.testing.assert_close``).

    Args:
        actual, expected: ember tensors, NumPy arrays, Python scalars, or sequences/mappings
            of these (compared element by element).
        rtol, atol: relative and absolute tolerance; both or neither. When omitted, the
            defaults of the inputs' dtypes apply (float32: 1.3e-6 / 1e-5, float64: 1e-7 / 1e-7,
            float16: 1e-3 / 1e-5, bfloat16: 1.6e-2 / 1e-5, integral and bool: exact).
        equal_nan: treat NaNs at the same position as equal.
        check_device, check_dtype, check_stride: also require equal devices, dtypes, strides.
            Without ``check_dtype``, values are compared in the promoted dtype.
        msg: replaces the generated message; a callable receives it and returns the new one.

    Raises:
        AssertionError: an attribute or value differs; the message says how.
        ValueError: only one of ``rtol`` and ``atol`` was given.
        TypeError: the inputs cannot be compared with each other.

    Example:
        >>> import ember
        >>> from ember.testing import assert_close
        >>> assert_close(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0 + 1e-7]))
    """
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {missing}.")
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                   check_dtype=check_dtype, check_stride=check_stride)
    try:
        _compare(actual, expected, options, "")
    except _Mismatch as err:
        text = err.message
        if err.path:
            text += f"\n\nThe failure occurred for item {err.path}"
        if callable(msg):
            text = msg(text)
        elif msg is not None:
            text = msg
        raise AssertionError(text) from None


def _compare(actual, expected, options: dict, path: str) -> None:
    if isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray):
        actual, expected = _from_array(actual), _from_array(expected)
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        return _compare_tensors(actual, expected, options, path)
    if _is_scalar(actual) and _is_scalar(expected):
        return _compare_scalars(actual, expected, options, path)
    if _is_sequence(actual) and _is_sequence(expected):
        return _compare_sequences(actual, expected, options, path)
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        return _compare_mappings(actual, expected, options, path)
    if actual is None and expected is None:
        return None
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and "
                    f"{type(expected)}.")


def _from_array(a: np.ndarray) -> Tensor:
    return from_numpy(np.ascontiguousarray(a))


def _is_scalar(x) -> bool:
    return isinstance(x, _SCALAR_TYPES)


def _is_sequence(x) -> bool:
    return isinstance(x, Sequence) and not isinstance(x, str | bytes)


def _compare_sequences(actual, expected, options: dict, path: str) -> None:
    if len(actual) != len(expected):
        raise _Mismatch(f"The length of the sequences mismatch: {len(actual)} != "
                        f"{len(expected)}", path)
    for i, (a, e) in enumerate(zip(actual, expected)):
        _compare(a, e, options, f"{path}[{i}]")


def _compare_mappings(actual, expected, options: dict, path: str) -> None:
    if set(actual) != set(expected):
        raise _Mismatch(f"The keys of the mappings do not match: {sorted(map(repr, actual))} != "
                        f"{sorted(map(repr, expected))}", path)
    for key in expected:
        _compare(actual[key], expected[key], options, f"{path}[{key!r}]")


def _compare_scalars(actual, expected, options: dict, path: str) -> None:
    if options["check_dtype"] and type(actual) is not type(expected):
        raise _Mismatch(f"The values for attribute 'type' do not match: {type(actual)} != "
                        f"{type(expected)}.", path)
    rtol, atol = options["rtol"], options["atol"]
    if rtol is None:
        rtol, atol = (1e-7, 1e-7) if isinstance(actual, float) or isinstance(expected, float) \
            else (0.0, 0.0)
    a, e = float(actual), float(expected)
    if _close(np.float64(a), np.float64(e), rtol, atol, options["equal_nan"]):
        return
    kind = "equal" if rtol == 0 and atol == 0 else "close"
    abs_diff = abs(a - e)
    rel_diff = abs_diff / abs(e) if e != 0 else (float("inf") if abs_diff else 0.0)
    raise _Mismatch(f"Scalars are not {kind}!\n\nExpected {expected} but got {actual}.\n"
                    f"Absolute difference: {_num(abs_diff)}{_allowed(atol, kind)}\n"
                    f"Relative difference: {_num(rel_diff)}{_allowed(rtol, kind)}", path)


def _check_attributes(actual: Tensor, expected: Tensor, options: dict, path: str) -> None:
    checks = [("shape", actual.shape, expected.shape)]
    if options["check_device"]:
        checks.append(("device", actual.device, expected.device))
    if options["check_dtype"]:
        checks.append(("dtype", actual.dtype, expected.dtype))
    if options["check_stride"]:
        checks.append(("stride()", actual.stride(), expected.stride()))
    for name, a, e in checks:
        if a != e:
            raise _Mismatch(f"The values for attribute '{name}' do not match: {a} != {e}.", path)


def _compare_tensors(actual: Tensor, expected: Tensor, options: dict, path: str) -> None:
    _check_attributes(actual, expected, options, path)
    if actual.is_meta or expected.is_meta:
        return
    rtol, atol = options["rtol"], options["atol"]
    if rtol is None:
        rtol, atol = default_tolerances(actual.dtype, expected.dtype)
    common = dt.promote_types(actual.dtype, expected.dtype)
    a, e = _as_compute_array(actual, common), _as_compute_array(expected, common)
    matches = _close(a, e, rtol, atol, options["equal_nan"],
                     common.is_floating_point or common.is_complex)
    if not np.all(matches):
        raise _Mismatch(_tensor_message(a, e, matches, rtol, atol, common), path)


def _as_compute_array(t: Tensor, common: dt.DType) -> np.ndarray:
    """The values in the dtype the comparison runs in (the promoted one, like torch.isclose)."""
    inexact = common.is_floating_point or common.is_complex
    return numpy_view(t).astype(common.np if inexact else np.int64)


def _close(a, e, rtol: float, atol: float, equal_nan: bool, floating: bool = True):
    """``a == e or |a - e| <= atol + |rtol * e|``, evaluated in ``a``'s dtype as torch does."""
    if not floating:
        if rtol == 0 and atol == 0:
            return np.equal(a, e)
        a, e = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - e)
        within = diff <= atol + np.abs(rtol * e)
        out = (a == e) | (within & np.isfinite(diff))
    if equal_nan:
        out = out | (np.isnan(a) & np.isnan(e))
    return out


def _tensor_message(a: np.ndarray, e: np.ndarray, matches, rtol: float, atol: float,
                    common: dt.DType) -> str:
    kind = "equal" if rtol == 0 and atol == 0 else "close"
    total, bad = matches.size, int(matches.size - np.count_nonzero(matches))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        wide = np.complex128 if a.dtype.kind == "c" else np.float64
        abs_diff = np.asarray(np.abs(a.astype(wide) - e.astype(wide)))
        rel_diff = np.asarray(abs_diff / np.abs(e.astype(wide)))
    rel_diff[abs_diff == 0] = 0.0
    abs_diff[matches] = 0.0
    rel_diff[matches] = 0.0
    integral = not (common.is_floating_point or common.is_complex)
    abs_at, abs_val = _greatest(abs_diff)
    rel_at, rel_val = _greatest(rel_diff)
    abs_text = _num(int(abs_val) if integral and np.isfinite(abs_val) else abs_val)
    return (f"Tensor-likes are not {kind}!\n\n"
            f"Mismatched elements: {bad} / {total} ({100.0 * bad / total:.1f}%)\n"
            f"Greatest absolute difference: {abs_text} at index {abs_at}{_allowed(atol, kind)}\n"
            f"Greatest relative difference: {_num(rel_val)} at index {rel_at}"
            f"{_allowed(rtol, kind)}")


def _greatest(diff: np.ndarray) -> tuple[tuple[int, ...], float]:
    """Index and value of the greatest entry; a NaN counts as the greatest."""
    flat = diff.reshape(-1)
    nans = np.flatnonzero(np.isnan(flat))
    pos = int(nans[0]) if nans.size else int(np.argmax(flat))
    index = tuple(int(i) for i in np.unravel_index(pos, diff.shape))
    return index, float(flat[pos])


def _num(value) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _allowed(tol: float, kind: str) -> str:
    return "" if kind == "equal" else f" (up to {tol} allowed)"
