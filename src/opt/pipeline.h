// Pipeline-parallel training iterations as optimisation problems (Perseus, SOSP'24 semantics).
//
// The synchronous 1F1B schedule (DeepSpeed's TrainSchedule, as lowtime's Synchronous1F1B):
// stage s runs its forward (F) and backward (B) passes of microbatches 0..M−1 in 1F1B order;
// F(s,m) waits for F(s−1,m), B(s,m) for B(s+1,m), B(S−1,m) for F(S−1,m). Each stage is one GPU
// whose idle power is P_blocked (Perseus's accounting: E = Σ(E_op − P_blocked·t_op) +
// S·T·P_blocked). Each pass's options are the measured (clock, time, energy) points of its
// stage and instruction in a Perseus stage profile — no curve fit.
#pragma once

#include <string>
#include <vector>

#include "model/measurements.h"
#include "opt/problem.h"

namespace emo::opt {

enum class PassKind { kForward, kBackward };

/// One stage's pass sequence in issue order: (kind, microbatch).
struct Pass {
  PassKind kind = PassKind::kForward;
  int microbatch = 0;
};

/// The 1F1B issue order of `stage` (0-based) in a pipeline of `stages` stages and `microbatches`
/// microbatches: 2·microbatches passes. E.g. stages 2, microbatches 3, stage 0: F0 F1 B0 F2 B1 B2;
/// stage 1: F0 B0 F1 B1 F2 B2. Throws std::invalid_argument unless 0 <= stage < stages, and
/// stages, microbatches >= 1.
std::vector<Pass> one_f_one_b_order(int stages, int microbatches, int stage);

struct PipelineSpec {
  int stages = 0;
  int microbatches = 0;
  double blocked_power_w = 0;  ///< idle power of each stage's GPU while not computing
};

/// A pipeline problem and what each node is.
struct PipelineProblem {
  Problem problem;
  std::vector<int> node_stage;
  std::vector<int> node_microbatch;
  std::vector<PassKind> node_kind;
};

/// Builds the 1F1B DAG from a Perseus stage profile (ops "stage S forward" / "stage S backward").
/// Throws emo::InputError naming the profile when a stage's forward or backward is missing, when
/// the profile has stages beyond spec.stages or other instructions, and emo::ArgumentError naming
/// the parameter ("stages", "microbatches", "p_blocked") when a figure is out of range.
PipelineProblem build_pipeline(const model::MeasurementSet& profile, const PipelineSpec& spec);

/// Every pass at its highest measured clock.
Assignment max_clock_assignment(const Problem& p);

}  // namespace emo::opt
