"""``ember.amp``: automatic mixed precision (``torch.amp``).

``autocast`` runs regions in mixed precision (the state and context manager are
``ember.dispatch.autocast``'s, the per-operator policies ``ember.backends.autocast``'s);
``custom_fwd`` / ``custom_bwd`` make custom autograd Functions autocast-aware.
"""

from ember.amp.autocast_mode import custom_bwd, custom_fwd
from ember.amp.grad_scaler import GradScaler
from ember.dispatch.autocast import autocast, is_autocast_available

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]
