// Which node each rank is on (core/nodes.hpp), at 1-4 ranks of one host:
// one node without WEAVE_NODE; the nodes WEAVE_NODE names, numbered in the
// order they first appear, when it is set (here: two ranks per emulated
// node, named in reverse so numbering by appearance shows); a WEAVE_NODE too
// long on one rank an error on every rank that names that rank.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "core/nodes.hpp"
#include "support/rank_checks.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  weave_test::RankChecks checks;
  const int g_rank = checks.rank(), g_size = checks.size();
  auto expect = [&](bool ok, const std::string& what) { checks.expect(ok, what); };
  using weave::internal::node_layout;
  using weave::internal::NodeLayout;

  unsetenv("WEAVE_NODE");
  NodeLayout one = node_layout(MPI_COMM_WORLD);
  expect(one.nodes == 1 && !one.emulated && one.ranks_per_node() == g_size, "one host is one node: " + one.summary());

  // Ranks 0,1 name "node-b", ranks 2,3 "node-a": node 0 is node-b.
  const std::string name = g_rank / 2 == 0 ? "node-b" : "node-a";
  setenv("WEAVE_NODE", name.c_str(), 1);
  NodeLayout two = node_layout(MPI_COMM_WORLD);
  const int expected_nodes = (g_size + 1) / 2;
  expect(two.nodes == expected_nodes && two.emulated, "emulated nodes: " + two.summary());
  for (int q = 0; q < g_size; ++q)
    expect(two.node_of_rank[static_cast<std::size_t>(q)] == q / 2, "rank " + std::to_string(q) + " on node " +
                                                                      std::to_string(two.node_of_rank[static_cast<std::size_t>(q)]));
  expect(two.ranks_per_node() == (g_size == 3 ? 0 : std::min(g_size, 2)), "ranks per node in " + two.summary());
  if (g_size == 3) expect(two.summary() == "2 nodes (2, 1 ranks)", "summary " + two.summary());
  if (g_size == 4) expect(two.summary() == "2 nodes of 2 ranks", "summary " + two.summary());

  // Too long on the last rank: every rank fails, naming it.
  if (g_rank == g_size - 1) setenv("WEAVE_NODE", std::string(weave::internal::kMaxNodeNameLength + 1, 'x').c_str(), 1);
  try {
    node_layout(MPI_COMM_WORLD);
    expect(false, "a too long WEAVE_NODE was accepted");
  } catch (const weave::internal::Error& e) {
    expect(e.status() == WEAVE_ERROR_INVALID_VALUE, "status of a too long WEAVE_NODE");
    expect(std::string(e.what()).find("WEAVE_NODE on rank " + std::to_string(g_size - 1)) != std::string::npos,
           std::string("message: ") + e.what());
  }

  const int status = checks.finish("node layouts on " + std::to_string(g_size) + " ranks");
  MPI_Finalize();
  return status;
}
