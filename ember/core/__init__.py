"""L1: dtypes (and promotion), devices, and pure shape/stride math. Knows no Tensor."""
