#include "transport/sm/peer_sum_links.hpp"

#include "core/error.hpp"

namespace weave::internal::transport::sm {

int PeerSumLinks::flags_needed(const plan::Schedule& schedule) {
  int flags = 0;
  for (const plan::Step& s : schedule.steps) {
    if (s.kind() == plan::StepKind::Publish) ++flags;
    if (const auto* sum = std::get_if<plan::PeerSumOp>(&s.op))
      for (const plan::SumTerm& t : sum->terms) flags += t.remote;
  }
  return flags;
}

PeerSumLinks::PeerSumLinks(MPI_Comm comm, const plan::Schedule& schedule, const PeerMappings& mappings,
                           int first_flag) {
  const int me = mappings.rank();
  // Flag numbering: publications, then remote terms, in schedule order.
  std::vector<PeerEntry> my_publications, my_reads;
  std::vector<const plan::Step*> publication_steps;
  struct Read {
    const plan::Step* step;
    std::size_t term;
  };
  std::vector<Read> reads;
  int next_flag = first_flag;
  for (const plan::Step& s : schedule.steps) {
    const auto* op = std::get_if<plan::PublishOp>(&s.op);
    if (!op) continue;
    if (op->src.buffer < plan::kFirstWorkspaceBuffer)
      fail(WEAVE_ERROR_INTERNAL, "a peer reads only the workspace (step '", s.label, "')");
    const int64_t offset = schedule.offset_from_binding(op->src);
    my_publications.push_back(PeerEntry{op->peer, op->tag, offset, schedule.bytes(op->src), next_flag++});
    publication_steps.push_back(&s);
  }
  for (const plan::Step& s : schedule.steps) {
    const auto* op = std::get_if<plan::PeerSumOp>(&s.op);
    if (!op) continue;
    terms_[&s].assign(op->terms.size(), TermLink{});
    const int64_t bytes = op->dst.elements() * static_cast<int64_t>(dtype_size(op->term_type));
    for (std::size_t t = 0; t < op->terms.size(); ++t) {
      if (!op->terms[t].remote) continue;
      my_reads.push_back(PeerEntry{op->terms[t].peer, op->terms[t].tag, 0, bytes, next_flag++});
      reads.push_back(Read{&s, t});
    }
  }
  const PeerDirectory publications(comm, my_publications), read_entries(comm, my_reads);
  auto index = [&](const plan::Step* s) { return static_cast<int>(s - schedule.steps.data()); };

  for (std::size_t i = 0; i < publication_steps.size(); ++i) {
    const PeerEntry& mine = my_publications[i];
    const int reader = static_cast<int>(mine.peer);
    const PeerEntry& match = read_entries.match(reader, me, mine, "read");
    uint32_t* released = mappings.flags(me) + mine.flag;
    publications_[publication_steps[i]] =
        PublicationLink{index(publication_steps[i]), reader, mappings.flags(reader) + match.flag, released};
    released_[{reader, static_cast<int>(mine.tag)}] = released;
  }
  for (std::size_t i = 0; i < reads.size(); ++i) {
    const PeerEntry& mine = my_reads[i];
    const int publisher = static_cast<int>(mine.peer);
    const PeerEntry& match = publications.match(publisher, me, mine, "publication");
    // A rank whose products are all empty (N = 0, say) has no workspace; a
    // read of nothing from it needs no address, only its flags.
    if (mine.bytes > 0 && !mappings.workspace(publisher))
      fail(WEAVE_ERROR_INTERNAL, "group rank ", publisher, " has no workspace");
    TermLink& link = terms_[reads[i].step][reads[i].term];
    link.data = mappings.workspace(publisher) ? mappings.workspace(publisher) + match.offset : nullptr;
    link.ready_flag = mappings.flags(me) + mine.flag;
    link.released_flag = mappings.flags(publisher) + match.flag;
  }
}

}  // namespace weave::internal::transport::sm
