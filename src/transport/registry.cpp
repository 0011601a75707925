#include "transport/registry.hpp"

#include "core/agreement.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "transport/copy_engine/copy_engine_entry.hpp"
#include "transport/mpi/mpi_transport.hpp"
#include "transport/nccl/nccl_entry.hpp"
#include "transport/peer/peer_entry.hpp"
#include "transport/sm/sm_entry.hpp"
#include "transport/ucx/ucx_entry.hpp"
#include "weave_features.h"

namespace weave::internal::transport {

namespace {

using plan::Algorithm;
using plan::Collectives;
using plan::MemorySupport;
using plan::Progression;
using plan::Reach;
using plan::SmUse;
using plan::TransportDescription;

std::unique_ptr<Transport> make_mpi(const TransportContext& c) {
  auto mpi = std::make_unique<MpiTransport>(duplicate(*c.group.channel));
  const int64_t max_tag = c.schedule.max_tag;
  if (max_tag > mpi->max_tag())
    fail(WEAVE_ERROR_UNSUPPORTED, "this schedule needs MPI tags up to ", max_tag, " but MPI_TAG_UB is ",
         mpi->max_tag(), "; use fewer chunks_per_shard (or wider panels, WEAVE_PANEL_WIDTH)");
  MpiTransport::check_collectives(c.schedule);
  return mpi;
}

std::unique_ptr<Transport> make_ucx(const TransportContext& c) {
  return make_ucx_transport(c.grid, c.group, c.schedule, c.problem.memory == Memory::Device);
}

std::unique_ptr<Transport> make_nccl(const TransportContext& c) {
  return make_nccl_transport(c.grid, c.group, c.resolved.timeout);
}

std::vector<TransportRow> make_table() {
  std::vector<TransportRow> rows;
  {
    TransportDescription d;
    d.id = plan::Transport::Mpi;
    d.name = "mpi";
    d.title = "MPI";
    d.compiled = true;
    d.build_option = "WEAVE_ENABLE_MPI";  // never asked for: MPI is always built
    d.host_memory = MemorySupport::Yes;
    d.device_memory = MemorySupport::No;  // Weave does not rely on CUDA-aware MPI
    d.progression = Progression::HostProgressed;
    d.collectives = Collectives::Own;
    d.calls_mpi = true;
    d.automatic = true;
    rows.push_back({d, nullptr, make_mpi});
  }
  {
    TransportDescription d;
    d.id = plan::Transport::Ucx;
    d.name = "ucx";
    d.title = "UCX";
    d.compiled = WEAVE_HAVE_UCX;
    d.build_option = "WEAVE_ENABLE_UCX";
    d.host_memory = MemorySupport::Yes;
    d.device_memory = MemorySupport::Probed;  // ucp_context_query at creation
    d.progression = Progression::HostProgressed;
    d.registers_memory = true;
    d.collectives = Collectives::PointToPoint;
    d.automatic = false;  // asked for by name
    rows.push_back({d, nullptr, make_ucx});
  }
  {
    TransportDescription d;
    d.id = plan::Transport::Sm;
    d.name = "sm";
    d.title = "SM";
    d.compiled = WEAVE_HAVE_CUDA;
    d.build_option = "WEAVE_ENABLE_CUDA";
    d.device_memory = MemorySupport::Yes;
    d.progression = Progression::StreamOrdered;
    d.sms = SmUse::Budget;
    d.reach = Reach::OneNodePeerAccess;
    d.exports_workspace = true;
    d.reads_peer_memory = true;
    d.collectives = Collectives::Nccl;
    d.automatic = true;  // where plan/transfer_choice.hpp's measured rule prefers it
    d.reduction_algorithm = Algorithm::Direct;
    rows.push_back({d, peer_access_usable, make_sm_transport});
  }
  {
    TransportDescription d;
    d.id = plan::Transport::CopyEngine;
    d.name = "copy_engine";
    d.title = "copy-engine";
    d.compiled = WEAVE_HAVE_COPY_ENGINE;
    d.build_option = "WEAVE_ENABLE_CUDA";
    d.device_memory = MemorySupport::Yes;
    d.progression = Progression::StreamOrdered;
    d.sms = SmUse::None;
    d.reach = Reach::OneNodePeerAccess;
    d.exports_workspace = true;
    d.collectives = Collectives::Nccl;
    d.automatic = true;
    d.reduction_algorithm = Algorithm::Direct;  // measured: doc/performance.md
    d.issue_order_measured = true;              // measured: doc/performance.md
    rows.push_back({d, peer_access_usable, make_copy_engine_transport});
  }
  {
    TransportDescription d;
    d.id = plan::Transport::Nccl;
    d.name = "nccl";
    d.title = "NCCL";
    d.compiled = WEAVE_HAVE_NCCL;
    d.build_option = "WEAVE_ENABLE_NCCL";
    d.device_memory = MemorySupport::Yes;
    d.progression = Progression::StreamOrdered;
    d.sms = SmUse::LibraryKernels;
    d.collectives = Collectives::Own;
    d.own_collectives_sum_16_bit = true;
    d.automatic = true;
    d.reduction_algorithm = Algorithm::Sequential;  // measured: doc/performance.md
    d.ag_gemm_ring_min_flops = plan::kNcclRingMinFlops;
    rows.push_back({d, nullptr, make_nccl});
  }
  return rows;
}

}  // namespace

const std::vector<TransportRow>& transport_table() {
  static const std::vector<TransportRow> table = make_table();
  return table;
}

std::vector<plan::TransportDescription> transport_descriptions() {
  std::vector<plan::TransportDescription> descriptions;
  for (const TransportRow& row : transport_table()) descriptions.push_back(row.description);
  return descriptions;
}

const TransportRow& transport_row(plan::Transport id) {
  for (const TransportRow& row : transport_table())
    if (row.description.id == id) return row;
  fail(WEAVE_ERROR_INTERNAL, "transport ", static_cast<int>(id), " has no row in the transport table");
}

}  // namespace weave::internal::transport
