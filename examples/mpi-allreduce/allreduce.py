"""Sums each rank's vector over every rank with MPI's allreduce, and checks the sum.

Run by mpirun in the launcher of an MPI job (job.yaml): Cohort's hostfile gives mpirun the
workers, and mpirun starts the ranks inside them through cohort-exec, with no sshd.
"""
import os
import socket
import sys

from mpi4py import MPI
import numpy as np

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
# Each rank's share: its rank + 1, in every element; the sum is 1 + 2 + ... + size.
mine = np.full(1024, rank + 1, dtype=np.float64)
total = np.empty_like(mine)
comm.Allreduce(mine, total, op=MPI.SUM)
expected = size * (size + 1) / 2
ok = bool(np.all(total == expected))
print(f"rank {rank}/{size} on {socket.gethostname()} in task "
      f"{os.environ.get('COHORT_TASK_ROLE')}/{os.environ.get('COHORT_TASK_INDEX')} "
      f"(GPUs {os.environ.get('CUDA_VISIBLE_DEVICES')}): sum {total[0]:.0f}, "
      f"{'ok' if ok else f'WRONG, expected {expected:.0f}'}", flush=True)
comm.Barrier()
if rank == 0:
    print(f"allreduce over {size} ranks: {'ok' if ok else 'WRONG'}", flush=True)
sys.exit(0 if ok else 1)
