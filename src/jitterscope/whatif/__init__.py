"""`jitterscope whatif`: trace-driven what-if of the shared-memory jitter paper's hardware remedies
(DVFS jitter compensation, an OS cache with overflow sharing, prefetching, selective pinning)."""
