#include "core/nodes.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

#include "core/error.hpp"
#include "core/mpi_check.hpp"

namespace weave::internal {

namespace {

// What each rank contributes: the lowest rank of its shared-memory domain,
// and its WEAVE_NODE (empty when unset; too long is marked, not truncated).
struct NodeKey {
  int domain = 0;
  int name_too_long = 0;
  char name[kMaxNodeNameLength + 1] = {0};
};

}  // namespace

int NodeLayout::ranks_on(int node) const {
  return static_cast<int>(std::count(node_of_rank.begin(), node_of_rank.end(), node));
}

int NodeLayout::ranks_per_node() const {
  const int first = ranks_on(0);
  for (int n = 1; n < nodes; ++n)
    if (ranks_on(n) != first) return 0;
  return first;
}

std::string NodeLayout::summary() const {
  if (nodes == 1) return "one node";
  const int per_node = ranks_per_node();
  if (per_node > 0) return str(nodes, " nodes of ", per_node, " rank", per_node > 1 ? "s" : "");
  std::string counts;
  for (int n = 0; n < nodes; ++n) counts += str(n ? ", " : "", ranks_on(n));
  return str(nodes, " nodes (", counts, " ranks)");
}

NodeLayout node_layout(MPI_Comm comm) {
  int rank = 0, size = 1;
  WEAVE_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  WEAVE_MPI_CHECK(MPI_Comm_size(comm, &size));
  NodeKey mine;
  MPI_Comm domain = MPI_COMM_NULL;
  WEAVE_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &domain));
  const int code = MPI_Allreduce(&rank, &mine.domain, 1, MPI_INT, MPI_MIN, domain);
  MPI_Comm_free(&domain);
  if (code != MPI_SUCCESS) fail_mpi(code, "MPI_Allreduce", __FILE__, __LINE__);
  if (const char* name = std::getenv("WEAVE_NODE")) {
    if (std::strlen(name) > static_cast<std::size_t>(kMaxNodeNameLength))
      mine.name_too_long = 1;
    else
      std::strncpy(mine.name, name, sizeof mine.name - 1);
  }
  std::vector<NodeKey> all(static_cast<std::size_t>(size));
  WEAVE_MPI_CHECK(MPI_Allgather(&mine, static_cast<int>(sizeof(NodeKey)), MPI_BYTE, all.data(),
                                static_cast<int>(sizeof(NodeKey)), MPI_BYTE, comm));
  // Every rank sees every key, so every rank fails alike.
  for (int q = 0; q < size; ++q)
    if (all[static_cast<std::size_t>(q)].name_too_long)
      fail(WEAVE_ERROR_INVALID_VALUE, "WEAVE_NODE on rank ", q, " is longer than ", kMaxNodeNameLength,
           " characters (it names the emulated node the rank is on)");
  NodeLayout layout;
  std::map<std::pair<int, std::string>, int> index;
  for (const NodeKey& key : all) {
    const auto at = index.emplace(std::make_pair(key.domain, std::string(key.name)), static_cast<int>(index.size()));
    layout.node_of_rank.push_back(at.first->second);
    layout.emulated = layout.emulated || key.name[0] != '\0';
  }
  layout.nodes = static_cast<int>(index.size());
  return layout;
}

}  // namespace weave::internal
