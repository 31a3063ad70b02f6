"""L8: utilities over the lower layers: ``dispatch`` looks inside the dispatcher, ``data`` loads
datasets in batches, ``checkpoint`` trades compute for activation memory,
``rename_privateuse1_backend`` and ``register_backend`` add a device from outside ember."""

from ember.utils import checkpoint, data, dispatch
from ember.utils.backend_registration import (
    DeviceBackend,
    generate_methods_for_privateuse1_backend,
    get_backend,
    privateuse1_name,
    register_backend,
    rename_privateuse1_backend,
)

__all__ = ["checkpoint", "data", "dispatch", "DeviceBackend", "rename_privateuse1_backend",
           "register_backend", "generate_methods_for_privateuse1_backend", "privateuse1_name",
           "get_backend"]
