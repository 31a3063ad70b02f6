"""``ember.nn.functional``: torch.nn.functional's functions.

Each family lives in its own module and is star-imported here, so adding functions to one
family never touches another: ``_core`` (linear, activations, dropout, embeddings,
normalisation, losses, distances), ``conv``, ``pooling`` and ``attention``.
"""

from ember.nn.functional._core import *  # noqa: F403
from ember.nn.functional.attention import *  # noqa: F403
from ember.nn.functional.conv import *  # noqa: F403
from ember.nn.functional.ctc import *  # noqa: F403
from ember.nn.functional.pooling import *  # noqa: F403
from ember.nn.functional.sampling import *  # noqa: F403
from ember.nn.functional.vision import *  # noqa: F403
