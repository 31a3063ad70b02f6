"""L4: Tensor (storage, layout, dtype, device, autograd fields, version counter), printing."""

from ember.tensor.tensor import (
    Size,
    Tensor,
    VersionCounter,
    empty_tensor,
    from_numpy,
    make_tensor,
    make_view,
    numpy_view,
    physical_view,
    store_resolved,
)

__all__ = ["Size", "Tensor", "VersionCounter", "empty_tensor", "from_numpy", "make_tensor",
           "make_view", "numpy_view", "physical_view",
           "store_resolved"]
