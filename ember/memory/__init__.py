"""L2: Storage, the bytes under every tensor, and the allocator they come from."""

from ember.memory.storage import Storage, UntypedStorage

__all__ = ["Storage", "UntypedStorage"]
