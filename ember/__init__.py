"""ember: a PyTorch-compatible deep-learning framework core.

This module only re-exports the torch-like namespace; docs/architecture.md describes the layers.
"""

from ember import accelerator as accelerator
from ember import amp as amp
from ember import autograd as autograd
from ember import backends as _backends  # noqa: F401  (autocast policies)
from ember import cuda as cuda
from ember import fft as fft
from ember import library as library
from ember import linalg as linalg
from ember import masked as masked
from ember import mps as mps
from ember import nn as nn
from ember import ops as ops
from ember import optim as optim
from ember import random as random
from ember import serialization as serialization
from ember import signal as signal
from ember import special as special
from ember import testing as testing
from ember import utils as utils
from ember.amp import GradScaler
from ember.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.backends import cuda as _backends_cuda  # noqa: F401  (torch.backends.cuda)
from ember.backends import cudnn as _backends_cudnn  # noqa: F401  (torch.backends.cudnn)
from ember.backends import mps as _backends_mps  # noqa: F401  (torch.backends.mps)
from ember.backends.threads import (
    get_num_interop_threads,
    get_num_threads,
    set_num_interop_threads,
    set_num_threads,
)
from ember.core.device import Device, device
from ember.core.dtype import (
    DType,
    bfloat16,
    can_cast,
    complex32,
    complex64,
    complex128,
    finfo,
    float16,
    float32,
    float64,
    get_default_dtype,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    set_default_dtype,
    uint8,
)
from ember.core.dtype import bool_ as bool  # noqa: A001
from ember.dispatch.autocast import (
    autocast,
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from ember.errors import OutOfMemoryError
from ember.nn.functional._toplevel import *  # noqa: F403
from ember.ops._promotion import result_type
from ember.ops.composites import *  # noqa: F403
from ember.ops.conv import *  # noqa: F403
from ember.ops.copy import clone
from ember.ops.creation import *  # noqa: F403
from ember.ops.fft import istft, stft
from ember.ops.linalg import *  # noqa: F403
from ember.ops.linalg_composites import *  # noqa: F403
from ember.ops.linalg_factor import *  # noqa: F403
from ember.ops.nn_ops import *  # noqa: F403
from ember.ops.numeric import *  # noqa: F403
from ember.ops.optimizer_steps import (  # noqa: F401
    _foreach_add_,
    _fused_adam_,
    _fused_adamw_,
    _fused_sgd_,
)
from ember.ops.pointwise import *  # noqa: F403
from ember.ops.pooling import *  # noqa: F403
from ember.ops.random import *  # noqa: F403
from ember.ops.random_dists import *  # noqa: F403
from ember.ops.reduction import *  # noqa: F403
from ember.ops.scatter_gather import *  # noqa: F403
from ember.ops.shape import *  # noqa: F403
from ember.ops.special import *  # noqa: F403
from ember.ops.tensor_api import *  # noqa: F403
from ember.ops.toplevel import *  # noqa: F403
from ember.ops.view_copies import *  # noqa: F403
from ember.ops.views import *  # noqa: F403
from ember.serialization import load, save
from ember.tensor import Size, Tensor, from_numpy
from ember.tensor.interop import from_dlpack
from ember.tensor.printing import get_printoptions, set_printoptions
from ember.utils import memory_history as _memory_history  # noqa: F401  (op names in history)

dtype = DType
float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16
char = int8
chalf = complex32
cfloat = complex64
cdouble = complex128

__version__ = "0.1.0"


def __getattr__(name: str):
    # ember.compile and ember.compiler load the compiler on first use (docs/architecture.md §1).
    if name == "vmap":
        import importlib

        return importlib.import_module("ember.func").vmap
    if name in ("compile", "compiler", "_dynamo", "_logging", "profiler", "func", "distributed",
                "distributions"):
        import importlib

        module = importlib.import_module("ember.compiler" if name == "compile" else
                                         f"ember.{name}")
        return module.compile if name == "compile" else module
    raise AttributeError(f"module 'ember' has no attribute {name!r}")


def _module_compile(module, *args, **kwargs):
    import importlib

    importlib.import_module("ember.compiler.api").compile_module_in_place(module, *args,
                                                                          **kwargs)


nn.Module._compile_hook = staticmethod(_module_compile)
