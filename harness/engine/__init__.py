"""The async engine: lanes, workers, retries, limits, HTTP pools, the batched writer, lane counters."""
