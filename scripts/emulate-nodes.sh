#!/bin/sh
# Runs one MPI rank as a member of an emulated node, so that one multi-GPU
# host looks like a cluster: put it between the launcher and the program,
#
#   WEAVE_EMULATED_NODES=2 WEAVE_EMULATED_NETWORK=network \
#     mpirun -np 4 sh scripts/emulate-nodes.sh ./program args
#
# Consecutive ranks share a node: with P ranks and N nodes, rank r is on
# node r / (P / N) (P must be a multiple of N). Each rank gets
#   WEAVE_NODE=emulated-<node>   Weave's notion of its node (core/nodes.hpp):
#                                ranks of different nodes get no copy-engine
#                                or SM transport between them, and
#                                hierarchical plans split the group there;
# and, for NCCL (GPU plans and the benchmark's collectives), by
# WEAVE_EMULATED_NETWORK:
#   network      NCCL_HOSTID=weave-emulated-<node> and NCCL_IB_DISABLE=1:
#                NCCL takes each emulated node for a host of its own and
#                connects them over its socket transport (Ethernet class),
#                NVLink within a node;
#   host-staged  NCCL_P2P_DISABLE=1: one host, every transfer staged
#                through host shared memory (roughly InfiniBand class);
#   none         (default) only WEAVE_NODE.
# Unset or 0 WEAVE_EMULATED_NODES runs the program unchanged.
set -eu

nodes=${WEAVE_EMULATED_NODES:-0}
if [ "$nodes" = 0 ]; then exec "$@"; fi

rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-}}}}
size=${OMPI_COMM_WORLD_SIZE:-${PMI_SIZE:-${SLURM_NTASKS:-}}}
if [ -z "$rank" ] || [ -z "$size" ]; then
  echo "emulate-nodes.sh: cannot tell this rank's number or the job's size from the launcher's environment" >&2
  exit 1
fi
if [ $((size % nodes)) -ne 0 ] || [ "$size" -lt "$nodes" ]; then
  echo "emulate-nodes.sh: $size ranks do not split into $nodes emulated nodes" >&2
  exit 1
fi
node=$((rank / (size / nodes)))
export WEAVE_NODE="emulated-$node"
case "${WEAVE_EMULATED_NETWORK:-none}" in
  network) export NCCL_HOSTID="weave-emulated-$node" NCCL_IB_DISABLE=1 ;;
  host-staged) export NCCL_P2P_DISABLE=1 ;;
  none) ;;
  *)
    echo "emulate-nodes.sh: WEAVE_EMULATED_NETWORK=${WEAVE_EMULATED_NETWORK} is not network, host-staged or none" >&2
    exit 1
    ;;
esac
exec "$@"
