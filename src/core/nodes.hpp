// Which node each rank of a group is on, as Weave sees it. Decides which
// transports reach a group (the copy-engine and SM transports need one node
// with peer access between its GPUs) and how a hierarchical plan splits the
// group into an exchange within nodes and one between them.
//
// A node is a shared-memory domain (MPI_COMM_TYPE_SHARED), refined by the
// environment variable WEAVE_NODE: ranks of one host that name different
// nodes are on different nodes. That makes one multi-GPU host look like a
// cluster (each emulated node a few of its GPUs) for tests and benchmarks;
// ranks on different hosts are on different nodes whatever they name.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace weave::internal {

// The longest WEAVE_NODE value (a name, not a number).
constexpr int kMaxNodeNameLength = 63;

struct NodeLayout {
  // node_of_rank[q]: the node of rank q, numbered from 0 in the order nodes
  // first appear among the ranks (empty: not found out).
  std::vector<int> node_of_rank;
  int nodes = 1;
  // Whether any rank's node came from WEAVE_NODE (for messages).
  bool emulated = false;

  int ranks_on(int node) const;
  // Every node holds the same number of ranks (0 if they differ).
  int ranks_per_node() const;
  // "2 nodes of 2 ranks", "3 nodes (2, 1, 1 ranks)", "one node".
  std::string summary() const;
};

// Collective over `comm`. A WEAVE_NODE longer than kMaxNodeNameLength on
// any rank is WEAVE_ERROR_INVALID_VALUE on every rank, naming that rank.
NodeLayout node_layout(MPI_Comm comm);

}  // namespace weave::internal
