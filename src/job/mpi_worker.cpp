#include "job/mpi_worker.h"

#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

#ifdef EMO_WITH_MPI
#include "job/messages.h"
#include "job/mpi_comm.h"
#endif

namespace emo::job {

#ifdef EMO_WITH_MPI
namespace {

using messages::Command, messages::CommandKind;

/// Positions in the job of process p's ranks (of n, over k processes): p, p + k, p + 2k, ...
std::vector<std::size_t> positions_of(std::size_t p, std::size_t k, std::size_t n) {
  std::vector<std::size_t> out;
  for (std::size_t i = p; i < n; i += k) out.push_back(i);
  return out;
}

/// `runs` as lists of one (the statics reply's shape, in which released runs cross).
std::vector<std::vector<RankRun>> as_lists(std::vector<RankRun> runs) {
  std::vector<std::vector<RankRun>> out;
  for (RankRun& r : runs) out.push_back({std::move(r)});
  return out;
}

/// Process 0's RankWorker: each step goes to every other process with the part for its ranks
/// (exchange); process 0's own ranks are worked by its own ThreadRankWorker meanwhile.
class MpiWorker : public RankWorker {
 public:
  MpiWorker(MpiShare& share, const JobPorts& jp, const model::GpuSpec& gpu, const driver::OptimizeOptions& options,
            const DecomposedOptions& how)
      : share_(share), jp_(jp), gpu_(gpu),
        own_(wrapped(std::make_unique<ThreadRankWorker>(share.traces, positions_of(0, share.processes, jp.open.size()),
                                                        part(jp.open, 0), gpu, rank_options(options), how),
                     how)) {}

  std::vector<timing::PortGraph> recorded() override {
    return exchange<timing::PortGraph>(
        [&](std::size_t q) { return command_bytes(CommandKind::kPorts, part(jp_.open, q)); },
        [&] { return own_->recorded(); }, messages::decode_ports_reply);
  }

  std::vector<RankPlan> solve(std::vector<trace::JobCut>& cuts, int round, double rank_slowdown) override {
    return exchange<RankPlan>(
        [&](std::size_t q) { return command_bytes(CommandKind::kRound, part(cuts, q), round, rank_slowdown); },
        [&] {
          std::vector<trace::JobCut> mine = part(cuts, 0);
          return own_->solve(mine, round, rank_slowdown);
        },
        messages::decode_plans_reply);
  }

  std::vector<RankRun> released(const std::vector<trace::JobCut>& releases) override {
    std::vector<std::vector<RankRun>> runs = exchange<std::vector<RankRun>>(
        [&](std::size_t q) { return command_bytes(CommandKind::kReleased, part(releases, q)); },
        [&] { return as_lists(own_->released(part(releases, 0))); }, messages::decode_statics_reply);
    std::vector<RankRun> out;
    for (std::vector<RankRun>& r : runs) {
      if (r.size() != 1) throw std::invalid_argument("solve_decomposed_mpi: one released run per rank expected");
      out.push_back(std::move(r.front()));
    }
    return out;
  }

  std::vector<RankLane> lanes(const std::vector<std::vector<TimeNs>>& port_end_ns, double static_mhz) override {
    return exchange<RankLane>(
        [&](std::size_t q) { return command_bytes(CommandKind::kLanes, {}, 0, 0, {static_mhz}, part(port_end_ns, q)); },
        [&] { return own_->lanes(part(port_end_ns, 0), static_mhz); }, messages::decode_lanes_reply);
  }

  std::vector<std::vector<RankRun>> statics(const std::vector<double>& clocks_mhz) override {
    return per_clock<RankRun>(
        CommandKind::kStatics, clocks_mhz, [&] { return own_->statics(clocks_mhz); }, messages::decode_statics_reply,
        "solve_decomposed_mpi: a static run per clock expected");
  }

  std::vector<std::vector<double>> static_energies(const std::vector<double>& clocks_mhz) override {
    return per_clock<double>(
        CommandKind::kStaticEnergies, clocks_mhz, [&] { return own_->static_energies(clocks_mhz); },
        messages::decode_energies_reply, "solve_decomposed_mpi: an energy per static clock expected");
  }

 private:
  /// The bytes of a command of `kind` on this job's GPU.
  std::string command_bytes(CommandKind kind, std::vector<trace::JobCut> cuts, int round = 0, double rank_slowdown = 0,
                            std::vector<double> clocks_mhz = {}, std::vector<std::vector<TimeNs>> port_end_ns = {}) const {
    Command c;
    c.port_end_ns = std::move(port_end_ns);
    c.kind = kind;
    c.gpu = gpu_.id;
    c.cuts = std::move(cuts);
    c.round = round;
    c.rank_slowdown = rank_slowdown;
    c.clocks_mhz = std::move(clocks_mhz);
    return messages::encode(c);
  }

  /// A step that asks every rank for one result per clock of `clocks_mhz` (command `kind`):
  /// exchange, then std::invalid_argument(`mismatch`) for a rank that answered another count.
  template <class T, class Own, class Decode>
  std::vector<std::vector<T>> per_clock(CommandKind kind, const std::vector<double>& clocks_mhz, Own&& own, Decode&& decode,
                                        const char* mismatch) {
    std::vector<std::vector<T>> out = exchange<std::vector<T>>(
        [&](std::size_t) { return command_bytes(kind, {}, 0, 0, clocks_mhz); }, std::forward<Own>(own), std::forward<Decode>(decode));
    for (const std::vector<T>& r : out) {
      if (r.size() != clocks_mhz.size()) throw std::invalid_argument(mismatch);
    }
    return out;
  }

  /// One step: `command(q)` sent to every other process q, then this process's own part (`own()`,
  /// its ranks in order), then every reply received (`decode(bytes)`, a result per rank of q;
  /// always all of them, so that no process is left sending); the first error (its own, then by
  /// process) is thrown after. Returns per rank of the job, in its order.
  template <class T, class MakeCommand, class Own, class Decode>
  std::vector<T> exchange(MakeCommand&& command, Own&& own, Decode&& decode) {
    const std::size_t k = share_.processes, n = jp_.open.size();
    for (std::size_t q = 1; q < k; ++q) mpi::send_bytes(command(q), static_cast<int>(q), mpi::kTagCommand);
    std::vector<T> out(n);
    std::exception_ptr error;
    try {
      std::vector<T> mine = own();
      for (std::size_t i = 0; i < mine.size(); ++i) out[i * k] = std::move(mine[i]);
    } catch (...) {
      error = std::current_exception();
    }
    for (std::size_t q = 1; q < k; ++q) {
      const std::string reply = mpi::recv_bytes(static_cast<int>(q), mpi::kTagReply);
      try {
        std::vector<T> theirs = decode(reply);
        if (theirs.size() != positions_of(q, k, n).size()) {
          throw std::invalid_argument("solve_decomposed_mpi: a process answered for other ranks");
        }
        for (std::size_t i = 0; i < theirs.size(); ++i) out[q + i * k] = std::move(theirs[i]);
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    return out;
  }

  /// The entries of `all` (job order) for process q's ranks.
  template <class T>
  std::vector<T> part(const std::vector<T>& all, std::size_t q) const {
    std::vector<T> out;
    for (const std::size_t i : positions_of(q, share_.processes, all.size())) out.push_back(all[i]);
    return out;
  }

  MpiShare& share_;
  const JobPorts& jp_;
  const model::GpuSpec& gpu_;
  std::unique_ptr<RankWorker> own_;
};

/// A process other than 0: its ranks, once process 0 has sent their ports.
class Served {
 public:
  Served(MpiShare& share, const driver::OptimizeOptions& options, const DecomposedOptions& how)
      : share_(share), options_(options), how_(how) {}

  /// Its reply to `command` (messages::is_command): the step's results, or the error it met.
  std::string answer(const std::string& command) {
    try {
      Command c = messages::decode_command(command);
      const model::GpuSpec& gpu = model::GpuCatalog::builtin().at(c.gpu);
      switch (c.kind) {
        case CommandKind::kPorts:
          if (c.cuts.size() != share_.traces.size()) throw std::invalid_argument("solve_decomposed_mpi: ports for other ranks");
          local_.reset();
          open_ = std::move(c.cuts);
          return messages::encode_reply(ranks(gpu).recorded());
        case CommandKind::kStatics: return messages::encode_reply(ranks(gpu).statics(c.clocks_mhz));
        case CommandKind::kStaticEnergies: return messages::encode_energies_reply(ranks(gpu).static_energies(c.clocks_mhz));
        case CommandKind::kRound: return messages::encode_reply(ranks(gpu).solve(c.cuts, c.round, c.rank_slowdown));
        case CommandKind::kReleased: return messages::encode_reply(as_lists(ranks(gpu).released(c.cuts)));
        case CommandKind::kLanes:
          return messages::encode_reply(ranks(gpu).lanes(c.port_end_ns, c.clocks_mhz.empty() ? 0.0 : c.clocks_mhz.front()));
      }
      throw std::invalid_argument("solve_decomposed_mpi: an unknown command");
    } catch (...) {
      return messages::encode_failure(std::current_exception());
    }
  }

 private:
  RankWorker& ranks(const model::GpuSpec& gpu) {
    if (!local_ || gpu_ != &gpu) {
      local_.reset();
      local_ = wrapped(std::make_unique<ThreadRankWorker>(share_.traces,
                                                          positions_of(share_.process, share_.processes, share_.paths.size()),
                                                          open_, gpu, rank_options(options_), how_),
                       how_);
      gpu_ = &gpu;
    }
    return *local_;
  }

  MpiShare& share_;
  driver::OptimizeOptions options_;
  DecomposedOptions how_;
  std::vector<trace::JobCut> open_;
  const model::GpuSpec* gpu_ = nullptr;
  std::unique_ptr<RankWorker> local_;
};

}  // namespace

DecomposedSolve solve_decomposed_mpi(const JobPorts& ports, MpiShare& share, const model::GpuSpec& gpu,
                                     const driver::OptimizeOptions& options, const DecomposedOptions& how) {
  try {
    if (!share.active() || share.process != 0) throw std::invalid_argument("solve_decomposed_mpi: not process 0 of a kept MPI load");
    if (ports.open.size() != share.paths.size()) throw std::invalid_argument("solve_decomposed_mpi: one trace per rank of the job expected");
    MpiWorker worker(share, ports, gpu, options, how);
    DecomposedSolve out = decompose(ports, gpu, options, worker);
    if (how.lanes) out.view = job_view(ports, out, worker, gpu);
    share.release(true);
    return out;
  } catch (...) {
    share.release(false);
    throw;
  }
}

void serve_decomposed_mpi(MpiShare& share, const driver::OptimizeOptions& options, const DecomposedOptions& how) {
  Served served(share, options, how);
  while (share.active()) {
    const std::string command = mpi::recv_bytes(0, mpi::kTagCommand);
    if (command == mpi::kDone) {
      share.release(true);
    } else if (command == mpi::kGather) {
      send_own_traces_mpi(share);
    } else if (!messages::is_command(command)) {
      share.release(false);
      throw MpiPeerFailed();
    } else {
      mpi::send_bytes(served.answer(command), 0, mpi::kTagReply);
    }
  }
}

#else

DecomposedSolve solve_decomposed_mpi(const JobPorts&, MpiShare&, const model::GpuSpec&, const driver::OptimizeOptions&,
                                     const DecomposedOptions&) {
  throw InputError("--mpi", "emo was built without MPI");
}

void serve_decomposed_mpi(MpiShare&, const driver::OptimizeOptions&, const DecomposedOptions&) {
  throw InputError("--mpi", "emo was built without MPI");
}

#endif

}  // namespace emo::job
