#include "opt/pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"

namespace emo::opt {
namespace {

// DeepSpeed TrainSchedule step -> (microbatch, is_forward) for one stage; steps alternate between
// forward and backward slots, shifted by the stage's depth in the pipeline.
std::pair<int, bool> step_to_microbatch(int step, int stage, int stages) {
  const bool even_step = step % 2 == 0, even_stage = stage % 2 == 0;
  if (even_step && even_stage) return {step / 2 - stage / 2, true};
  if (!even_step && !even_stage) return {(step - 1) / 2 - stage / 2, true};
  if (even_step && !even_stage) return {step / 2 - stages + (stage + 1) / 2, false};
  return {(step - 1) / 2 - stages + 1 + stage / 2, false};
}

}  // namespace

std::vector<Pass> one_f_one_b_order(int stages, int microbatches, int stage) {
  if (stages < 1 || microbatches < 1 || stage < 0 || stage >= stages) {
    throw std::invalid_argument("1F1B order: need stages >= 1, microbatches >= 1, 0 <= stage < stages");
  }
  std::vector<Pass> out;
  const int steps = 2 * (microbatches + stages - 1);
  for (int step = 0; step < steps; ++step) {
    const auto [mb, fwd] = step_to_microbatch(step, stage, stages);
    if (mb >= 0 && mb < microbatches) out.push_back({fwd ? PassKind::kForward : PassKind::kBackward, mb});
  }
  return out;
}

PipelineProblem build_pipeline(const model::MeasurementSet& profile, const PipelineSpec& spec) {
  if (spec.stages < 1) throw ArgumentError("stages", fmt::format("{}", spec.stages), "not a positive stage count");
  if (spec.microbatches < 1) {
    throw ArgumentError("microbatches", fmt::format("{}", spec.microbatches), "not a positive microbatch count");
  }
  if (!(spec.blocked_power_w >= 0) || !std::isfinite(spec.blocked_power_w)) {
    throw ArgumentError("p_blocked", fmt::format("{}", spec.blocked_power_w), "not a finite power >= 0 (W)");
  }
  // op name -> measurements; every op must be "stage S forward|backward" with S < stages.
  std::map<std::pair<int, PassKind>, const model::OpMeasurements*> ops;
  int max_stage = -1;
  for (const auto& op : profile.ops) {
    int s = -1;
    char kind[32] = {0};
    if (std::sscanf(op.op.c_str(), "stage %d %31s", &s, kind) != 2 || s < 0 ||
        (std::string(kind) != "forward" && std::string(kind) != "backward")) {
      throw InputError(profile.path, fmt::format("unknown stage/instruction '{}' (expected 'forward' or "
                                                 "'backward' of a stage >= 0)", op.op));
    }
    max_stage = std::max(max_stage, s);
    ops[{s, std::string(kind) == "forward" ? PassKind::kForward : PassKind::kBackward}] = &op;
  }
  if (max_stage >= spec.stages) {
    throw InputError(profile.path, fmt::format("the profile has stages 0-{} but the pipeline has {} stages", max_stage,
                                               spec.stages));
  }
  PipelineProblem out;
  Problem& p = out.problem;
  std::vector<std::vector<int>> fwd(spec.stages, std::vector<int>(spec.microbatches, -1)), bwd = fwd;
  for (int s = 0; s < spec.stages; ++s) {
    const int gpu = p.add_gpu(fmt::format("stage {}", s), spec.blocked_power_w);
    for (PassKind kind : {PassKind::kForward, PassKind::kBackward}) {
      if (!ops.count({s, kind})) {
        throw InputError(profile.path, fmt::format("no measurements for stage {} {} (stages {})", s,
                                                   kind == PassKind::kForward ? "forward" : "backward", spec.stages));
      }
    }
    int prev = -1;
    for (const Pass& pass : one_f_one_b_order(spec.stages, spec.microbatches, s)) {
      const model::OpMeasurements* m = ops.at({s, pass.kind});
      std::vector<Option> opts;
      for (const auto& pt : m->points) opts.push_back({pt.clock_mhz, pt.time_s, pt.energy_j});
      const int id = p.add_node(fmt::format("{} mb {}", m->op, pass.microbatch), gpu, std::move(opts));
      out.node_stage.push_back(s);
      out.node_microbatch.push_back(pass.microbatch);
      out.node_kind.push_back(pass.kind);
      (pass.kind == PassKind::kForward ? fwd : bwd)[s][pass.microbatch] = id;
      if (prev >= 0) p.add_edge(prev, id);
      prev = id;
    }
  }
  for (int s = 0; s < spec.stages; ++s) {
    for (int m = 0; m < spec.microbatches; ++m) {
      if (s > 0) p.add_edge(fwd[s - 1][m], fwd[s][m]);
      if (s + 1 < spec.stages) p.add_edge(bwd[s + 1][m], bwd[s][m]);
    }
  }
  for (int m = 0; m < spec.microbatches; ++m) p.add_edge(fwd[spec.stages - 1][m], bwd[spec.stages - 1][m]);
  p.topo_order();  // a malformed order would show up here as a cycle
  return out;
}

Assignment max_clock_assignment(const Problem& p) {
  Assignment a(p.node_count(), 0);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& o = p.nodes()[i].options;
    for (std::size_t k = 1; k < o.size(); ++k) {
      if (o[k].clock_mhz > o[a[i]].clock_mhz) a[i] = static_cast<int>(k);
    }
  }
  return a;
}

}  // namespace emo::opt
