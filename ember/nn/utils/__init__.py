"""``ember.nn.utils``: gradient clipping, parameter/vector conversion, ``rnn`` packing,
parametrizations (``parametrize``, ``parametrizations``), the legacy weight/spectral norm hooks,
conv/linear + BatchNorm fusion, ``stateless.functional_call`` and ``skip_init``."""

from ember.nn.utils import parametrizations, parametrize, rnn, stateless
from ember.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from ember.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from ember.nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from ember.nn.utils.init import skip_init
from ember.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from ember.nn.utils.weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters", "rnn",
           "parametrize", "parametrizations", "stateless", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights", "skip_init",
           "spectral_norm", "remove_spectral_norm", "weight_norm", "remove_weight_norm"]
