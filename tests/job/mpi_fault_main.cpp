// emo_test_mpi_fault: for tests/cli/optimize_mpi_test.sh only. Under mpirun it does what
// `emo optimize --gpu A100-SXM4-80GB --max-slowdown 0.05 --solve decomposed --mpi TRACE...` does
// (load_own_traces_mpi, link from the digests, solve_decomposed_mpi on process 0 and
// serve_decomposed_mpi on the others), except that the rank solves of process FAIL fail: its
// in-process RankWorker is wrapped (DecomposedOptions::wrap_worker, job/rank_worker.h) by one whose
// solve() throws InputError("test RankWorker", "process FAIL fails its rank solves as asked").
// It shows that a failure in any process's solves ends every process without a hang: exit 2 and
// one line on stderr from process 0 (as emo's main prints an InputError).
//   mpirun -np K emo_test_mpi_fault FAIL TRACE...
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "job/job_solve.h"
#include "job/load_job.h"
#include "job/mpi_worker.h"
#include "job/rank_worker.h"
#include "model/gpu_catalog.h"
#include "trace/job.h"

namespace {

using namespace emo;

/// Forwards to the worker it wraps, except solve(), which throws.
class FailingSolves : public job::RankWorker {
 public:
  FailingSolves(std::unique_ptr<job::RankWorker> inner, std::size_t process)
      : inner_(std::move(inner)), process_(process) {}
  std::vector<timing::PortGraph> recorded() override { return inner_->recorded(); }
  std::vector<job::RankPlan> solve(std::vector<trace::JobCut>&, int, double) override {
    throw InputError("test RankWorker", "process " + std::to_string(process_) + " fails its rank solves as asked");
  }
  std::vector<std::vector<job::RankRun>> statics(const std::vector<double>& clocks_mhz) override {
    return inner_->statics(clocks_mhz);
  }
  std::vector<std::vector<double>> static_energies(const std::vector<double>& clocks_mhz) override {
    return inner_->static_energies(clocks_mhz);
  }
  std::vector<job::RankRun> released(const std::vector<trace::JobCut>& releases) override {
    return inner_->released(releases);
  }

 private:
  std::unique_ptr<job::RankWorker> inner_;
  std::size_t process_;
};

int run(std::size_t fail, const std::vector<std::string>& paths) {
  job::MpiShare share;
  std::vector<trace::RankDigest> digests;
  try {
    digests = job::load_own_traces_mpi(paths, job::LoadOptions{}, share);
  } catch (const job::MpiPeerFailed&) {
    return 2;  // process 0 prints the error
  }
  driver::OptimizeOptions options;
  options.max_slowdown = 0.05;
  job::DecomposedOptions how;
  how.wrap_worker = [&](std::unique_ptr<job::RankWorker> w) -> std::unique_ptr<job::RankWorker> {
    if (share.process != fail) return w;
    return std::make_unique<FailingSolves>(std::move(w), share.process);
  };
  if (share.process != 0) {
    try {
      job::serve_decomposed_mpi(share, options, how);
    } catch (const job::MpiPeerFailed&) {
      return 2;
    }
    return 0;
  }
  const job::JobPorts jp = job::job_ports(digests, trace::link_ranks(digests));
  const model::GpuSpec& gpu = model::GpuCatalog::builtin().at("A100-SXM4-80GB");
  const job::DecomposedSolve d = job::solve_decomposed_mpi(jp, share, gpu, options, how);
  std::printf("decomposed solve of %zu ranks: savings %.4f (simulated)\n", d.ranks.size(), d.savings());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: mpirun -np K emo_test_mpi_fault FAIL_PROCESS TRACE...\n");
    return 2;
  }
  try {
    return run(std::stoul(argv[1]), std::vector<std::string>(argv + 2, argv + argc));
  } catch (const emo::InputError& e) {
    std::fprintf(stderr, "emo_test_mpi_fault: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "emo_test_mpi_fault: internal error: %s\n", e.what());
    return 1;
  }
}
