#!/bin/sh
# Runs one MPI rank of a job that has more ranks than GPUs, so that a machine
# of one or two GPUs can run the GPU tests at 3 and 4 ranks (correctness
# only: the ranks' kernels take turns on a shared GPU). Put it between the
# launcher and the program:
#
#   WEAVE_TEST_SHARE_GPUS=1 mpirun -np 4 sh scripts/share-gpus.sh ./program args
#
# Weave itself needs nothing for this: ranks of one node that share a GPU
# reach each other's memory through CUDA IPC on that device, so the
# copy-engine and SM transports run between them as between GPUs. NCCL
# refuses two ranks of one host on one GPU ("Duplicate GPU detected"); it
# tells hosts apart by NCCL_HOSTID, so each rank gets its own,
#   NCCL_HOSTID=weave-shared-<rank> and NCCL_IB_DISABLE=1,
# and NCCL connects the ranks over its socket transport. Weave's notion of
# the node (WEAVE_NODE, core/nodes.hpp) is left alone: after
# scripts/emulate-nodes.sh (which sets it) this gives emulated nodes of
# several ranks on one GPU.
set -eu

rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-}}}}
if [ -z "$rank" ]; then
  echo "share-gpus.sh: cannot tell this rank's number from the launcher's environment" >&2
  exit 1
fi
export NCCL_HOSTID="weave-shared-$rank" NCCL_IB_DISABLE=1
exec "$@"
