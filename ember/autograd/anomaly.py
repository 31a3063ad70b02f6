"""Anomaly detection: forward stacks on nodes, NaN checks on backward outputs."""

from __future__ import annotations

import threading
import traceback
import warnings

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]


class _AnomalyState(threading.local):
    def __init__(self):
        self.enabled = False
        self.check_nan = True


_state = _AnomalyState()


def is_anomaly_enabled() -> bool:
    return _state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return _state.enabled and _state.check_nan


def record_stack(node) -> None:
    """Remember where ``node``'s forward op was called (only while anomaly mode is on)."""
    node._anomaly_trace = "".join(traceback.format_stack()[:-3])


def report(node) -> None:
    """Warn with the forward stack of the node whose backward failed."""
    trace = node._anomaly_trace or "(no forward trace recorded)\n"
    warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the "
                  f"error:\n{trace}", RuntimeWarning, stacklevel=3)


def check_nan(node, outs) -> None:
    """RuntimeError when a backward output contains NaN (anomaly mode with ``check_nan``)."""
    for i, g in enumerate(outs):
        if g is not None and g._dtype.is_floating_point and bool(g.isnan().any()):
            report(node)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               "output.")


class set_detect_anomaly:
    """Turn anomaly detection on or off (a function and a context manager).

    Example:
        >>> from ember.autograd.anomaly import is_anomaly_enabled
        >>> with ember.autograd.set_detect_anomaly(True):
        ...     print(is_anomaly_enabled())
        True
        >>> is_anomaly_enabled()
        False
    """

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = (_state.enabled, _state.check_nan)
        _state.enabled, _state.check_nan = bool(mode), bool(check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.check_nan = self.prev


class detect_anomaly:
    """Context manager enabling anomaly detection (warns that it slows things down).

    Example:
        >>> x = ember.tensor([0.0], requires_grad=True)
        >>> with ember.autograd.detect_anomaly():
        ...     try:
        ...         (x.sqrt() * 0).sum().backward()
        ...     except RuntimeError as e:
        ...         print(e)
        Function 'SqrtBackward0' returned nan values in its 0th output.
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)
        self.prev = (_state.enabled, _state.check_nan)
        _state.enabled, _state.check_nan = True, self.check_nan
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.check_nan = self.prev
