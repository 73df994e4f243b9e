"""Cluster scale: `cluster measure` and `cluster bsp` under MPI (mpi4py imported lazily)."""
