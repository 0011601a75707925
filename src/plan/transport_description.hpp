// What a transport is, as the planner sees it: one row of properties per
// transport (as NCCL's transport table), filled in by the transport table
// (src/transport/registry.cpp) and handed to the planner inside its
// Capabilities. The planner chooses and checks transports by these
// properties, never by name, so a new transport is its folder plus its row.
#pragma once

#include <cstdint>

#include "plan/schedule.hpp"
#include "weave/weave.h"

namespace weave::internal::plan {

enum class Transport {
  Mpi = WEAVE_TRANSPORT_MPI,
  Nccl = WEAVE_TRANSPORT_NCCL,
  Ucx = WEAVE_TRANSPORT_UCX,
  CopyEngine = WEAVE_TRANSPORT_COPY_ENGINE,
  Sm = WEAVE_TRANSPORT_SM
};

// Whether a transport moves a kind of memory.
enum class MemorySupport : uint8_t {
  No,
  Yes,
  Probed  // the library is asked when the transport is created (UCX and CUDA memory)
};

// How transfers make progress.
enum class Progression : uint8_t {
  HostProgressed,  // requests posted and polled by the executor
  StreamOrdered    // enqueued on the communication stream; capturable in a CUDA graph
};

// SMs a transport takes from the GEMMs while it moves data.
enum class SmUse : uint8_t {
  None,           // copy engines and stream memory operations, or the host
  Budget,         // its own kernels on a bounded number of CTAs, one per SM (WEAVE_SM_TRANSPORT_CTAS);
                  // the GEMMs of overlapped plans are sized to leave those SMs free
  LibraryKernels  // the library's own kernels (NCCL's channels)
};

// Which ranks a transport can connect.
enum class Reach : uint8_t {
  AnyRanks,
  // Every rank of the group on one node with peer access between their
  // GPUs: probed collectively at plan creation (the peer-access probe).
  OneNodePeerAccess
};

// How the sequential algorithm's collectives run.
enum class Collectives : uint8_t {
  Own,           // the library's collectives (MPI's, NCCL's)
  PointToPoint,  // built from the transport's own messages (UCX; host memory)
  Nccl           // delegated to NCCL
};

struct TransportDescription {
  Transport id = Transport::Mpi;
  const char* name = "";          // the WEAVE_TRANSPORT value; describe's name
  const char* title = "";         // in messages: "the <title> transport"
  bool compiled = false;          // part of this build
  const char* build_option = "";  // the CMake option that builds it
  MemorySupport host_memory = MemorySupport::No;
  MemorySupport device_memory = MemorySupport::No;
  Progression progression = Progression::HostProgressed;
  SmUse sms = SmUse::None;
  Reach reach = Reach::AnyRanks;
  bool exports_workspace = false;  // peers map the plan's workspace (CUDA IPC), so it must be exportable memory
  bool registers_memory = false;   // registers the workspace with its library (UCX)
  // Its kernels read peers' workspaces directly, so a reduction's owner can
  // read every product where it was made and sum it in the same pass
  // (schedules with PeerSum steps).
  bool reads_peer_memory = false;
  Collectives collectives = Collectives::Own;
  // Collectives::Own: the library's reduce-scatter and all-reduce sum f16
  // and bf16 (NCCL's do; MPI has no datatype for them).
  bool own_collectives_sum_16_bit = false;
  // Calls MPI while an execute runs, so a host progress thread needs
  // MPI_THREAD_SERIALIZED or higher.
  bool calls_mpi = false;
  // A candidate for plans that leave the transport automatic. Rows are
  // considered in table order; the first whose memory, reach and probe fit
  // is taken (a row taking SMs from a budget only where the measured rule of
  // transfer_choice.hpp prefers SM-driven transfers).
  bool automatic = false;
  // What plans over this transport run when the algorithm is left
  // automatic, as measured (doc/performance.md): the reductions' algorithm
  // (device plans) and, where it is the sequential one, the flops per rank
  // from which AG-GEMM runs the ring.
  Algorithm reduction_algorithm = Algorithm::Ring;
  double ag_gemm_ring_min_flops = 0;
  // Stream-ordered rows: the orders in which the host may enqueue an
  // execute's work were timed over this transport, so plans take the one
  // measured fastest (issue_order_measured_fastest); elsewhere every ready
  // transfer goes first, the order they were all measured with.
  bool issue_order_measured = false;
};

}  // namespace weave::internal::plan
