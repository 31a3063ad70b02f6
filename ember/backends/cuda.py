"""``ember.backends.cuda``: the CUDA switches scripts set (``torch.backends.cuda``).

NOTE [Device namespaces without a device]
``ember.cuda``, ``ember.backends.cuda``/``cudnn``/``mps``, ``ember.mps`` and
``ember.accelerator`` exist on every machine, as torch's do on a CPU-only build, so a script
written for a GPU runs unchanged where there is none. Each of them asks one question,
``cuda_backend()`` below: is a ``"cuda"`` backend descriptor registered in the device registry
(``ember.memory.devices``)? While none is, they answer as torch's CPU-only build answers
(``is_available()`` False, memory figures 0, torch's exception types where torch raises). A
CUDA device registered later fills them in by being found there; their callers do not change.

The flags here are plain process-wide state: ember's CPU kernels do not read them (matmul is
always full float32, attention always the math path), but they keep their values and type
checks, and a CUDA backend reads them.
"""

from __future__ import annotations

import contextlib
import enum
import warnings

__all__ = ["matmul", "is_built", "cuda_backend", "SDPBackend", "sdp_kernel",
           "enable_flash_sdp", "flash_sdp_enabled", "enable_mem_efficient_sdp",
           "mem_efficient_sdp_enabled", "enable_math_sdp", "math_sdp_enabled",
           "enable_cudnn_sdp", "cudnn_sdp_enabled", "allow_fp16_bf16_reduction_math_sdp",
           "fp16_bf16_reduction_math_sdp_allowed", "is_flash_attention_available",
           "preferred_linalg_library", "preferred_blas_library"]


def cuda_backend():
    """The registered ``"cuda"`` backend descriptor, or None while there is none.

    The single question every device namespace asks (NOTE [Device namespaces without a
    device]); it never imports a backend.
    """
    from ember.memory import devices

    for backend in devices.registered_backends():
        if backend.name == "cuda":
            return backend
    return None


def is_built() -> bool:
    """Whether ember has a CUDA backend (``torch.backends.cuda.is_built``).

    Example:
        >>> import ember
        >>> ember.backends.cuda.is_built()
        False
    """
    return cuda_backend() is not None


def check_bool(setter: str, value) -> bool:
    """``value`` if it is a bool; else torch's ``RuntimeError`` naming ``setter``."""
    if type(value) is not bool:
        raise RuntimeError(f"{setter} expects a bool, but got {type(value).__name__}")
    return value


class _CuBLASModule:
    """``torch.backends.cuda.matmul``: cuBLAS switches, set and read as attributes.

    ``allow_tf32`` (default False), ``allow_fp16_reduced_precision_reduction`` and
    ``allow_bf16_reduced_precision_reduction`` (default True), ``fp32_precision``.
    Unknown names raise ``AttributeError("Unknown attribute <name>")``, as torch's.
    """

    _SETTERS = {"allow_tf32": "set_allow_tf32_cublas",
                "allow_fp16_reduced_precision_reduction": "set_allow_fp16_reduction_cublas",
                "allow_bf16_reduced_precision_reduction": "set_allow_bf16_reduction_cublas"}

    def __init__(self) -> None:
        state = {"allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
                 "allow_bf16_reduced_precision_reduction": True, "fp32_precision": "none"}
        object.__setattr__(self, "_state", state)

    def __getattr__(self, name: str):
        state = object.__getattribute__(self, "_state")
        if name in state:
            return state[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name: str, value) -> None:
        if name in self._SETTERS:
            value = check_bool(self._SETTERS[name], value)
        elif name == "fp32_precision":
            if value not in ("none", "ieee", "tf32"):
                raise RuntimeError(f"Invalid fp32_precision {value!r}; expected one of "
                                   "'none', 'ieee', 'tf32'")
        else:
            raise AttributeError(f"Unknown attribute {name}")
        self._state[name] = value
        if name == "allow_tf32":  # the legacy switch sets the new one, as torch's does
            self._state["fp32_precision"] = "tf32" if value else "ieee"


matmul = _CuBLASModule()


class SDPBackend(enum.IntEnum):
    """The scaled-dot-product-attention implementations (``torch.backends.cuda.SDPBackend``)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}
_SDP_SETTER = {"flash": "set_sdp_use_flash", "mem_efficient": "set_sdp_use_mem_efficient",
               "math": "set_sdp_use_math", "cudnn": "set_sdp_use_cudnn"}
_REDUCTION_MATH_SDP = [False]


def _sdp_switch(kind: str):
    def enable(enabled: bool) -> None:
        _SDP[kind] = check_bool(_SDP_SETTER[kind], enabled)

    def enabled() -> bool:
        return _SDP[kind]

    enable.__name__, enabled.__name__ = f"enable_{kind}_sdp", f"{kind}_sdp_enabled"
    enable.__doc__ = f"Allow (True) or forbid the {kind} attention kernel (a process-wide flag)."
    enabled.__doc__ = f"Whether the {kind} attention kernel is allowed (default True)."
    return enable, enabled


enable_flash_sdp, flash_sdp_enabled = _sdp_switch("flash")
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _sdp_switch("mem_efficient")
enable_math_sdp, math_sdp_enabled = _sdp_switch("math")
enable_cudnn_sdp, cudnn_sdp_enabled = _sdp_switch("cudnn")


def allow_fp16_bf16_reduction_math_sdp(enabled: bool) -> None:
    """Allow reduced-precision reductions in the math attention path (a process-wide flag)."""
    _REDUCTION_MATH_SDP[0] = check_bool("set_math_sdp_allow_fp16_bf16_reduction", enabled)


def fp16_bf16_reduction_math_sdp_allowed() -> bool:
    """Whether the math attention path may reduce in fp16/bf16 (default False)."""
    return _REDUCTION_MATH_SDP[0]


def is_flash_attention_available() -> bool:
    """Whether a flash-attention kernel exists (False without a CUDA backend)."""
    return is_built()


@contextlib.contextmanager
def _sdp_kernel(flags: dict):
    saved = dict(_SDP)
    try:
        for kind, value in flags.items():
            _SDP[kind] = check_bool(_SDP_SETTER[kind], value)
        yield
    finally:
        _SDP.update(saved)


def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True):
    """Set the four attention-kernel flags inside a ``with`` block (deprecated, as in torch).

    Warns ``FutureWarning`` (torch's message, pointing at ``sdpa_kernel``) and restores the
    previous flags on exit.

    Example:
        >>> import ember, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     with ember.backends.cuda.sdp_kernel(enable_flash=False):
        ...         ember.backends.cuda.flash_sdp_enabled()
        False
    """
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this "
                  "context manager will be removed. Please see `torch.nn.attention.sdpa_kernel()` "
                  "for the new context manager, with updated signature.", FutureWarning,
                  stacklevel=2)
    return _sdp_kernel({"flash": enable_flash, "math": enable_math,
                        "mem_efficient": enable_mem_efficient, "cudnn": enable_cudnn})


class _LinalgBackend(enum.IntEnum):
    Default = 0
    Cusolver = 1
    Magma = 2


class _BlasBackend(enum.IntEnum):
    Default = 0
    Cublas = 1
    Cublaslt = 2
    Ck = 3


_PREFERRED = {"linalg": _LinalgBackend.Default, "blas": _BlasBackend.Cublas}


def preferred_linalg_library(backend=None) -> _LinalgBackend:
    """The preferred CUDA linear-algebra library; ``backend`` ("cusolver", "magma",
    "default") sets it first."""
    if backend is not None:
        name = backend if isinstance(backend, str) else backend.name
        _PREFERRED["linalg"] = _choice(_LinalgBackend, name, "preferred_linalg_library")
    return _PREFERRED["linalg"]


def preferred_blas_library(backend=None) -> _BlasBackend:
    """The preferred CUDA BLAS library; ``backend`` ("cublas", "cublaslt", "ck") sets it
    first."""
    if backend is not None:
        name = backend if isinstance(backend, str) else backend.name
        _PREFERRED["blas"] = _choice(_BlasBackend, name, "preferred_blas_library")
    return _PREFERRED["blas"]


def _choice(kind: type[enum.IntEnum], name: str, fn: str):
    for member in kind:
        if member.name.lower() == name.lower():
            return member
    raise RuntimeError(f"{fn}: unknown backend {name!r}; expected one of "
                       f"{', '.join(repr(m.name.lower()) for m in kind)}")
