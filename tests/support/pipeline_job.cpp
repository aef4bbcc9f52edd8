#include "support/pipeline_job.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "graph/algorithms.h"
#include "support/draw.h"

namespace emo::testing {
namespace {

using trace::kNone;
using trace::OpKind;
using trace::Trace;

constexpr std::uint64_t kJitterSalt = 0x70706a74ULL, kOffsetSalt = 0x70706f66ULL;
constexpr std::uint32_t kNoOp = UINT32_MAX;
constexpr std::int64_t kPidBase = 10'000;  ///< Rank r's host process (and thread) id: kPidBase + r.

/// Median of `v` (the upper one of an even count), or `fallback` when empty.
TimeNs median_or(std::vector<TimeNs> v, TimeNs fallback) {
  if (v.empty()) return fallback;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

/// "[0, 4, 8]".
std::string rank_list(const std::vector<int>& ranks) {
  std::string out = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i) out += fmt::format("{}{}", i ? ", " : "", ranks[i]);
  return out + "]";
}

}  // namespace

void PipelineJob::check(const PipelineSpec& s, const JobSource& src) {
  auto bad = [&](const std::string& what) {
    throw std::invalid_argument(fmt::format("pipeline spec: {} ({})", what, describe(s)));
  };
  if (s.stages < 1 || s.microbatches < 1 || s.dp < 1 || s.tp < 1 || s.iterations < 1 || s.layers < 1 || s.virtual_stages < 1)
    bad("stages, microbatches, virtual stages, dp, tp, iterations and layers must be >= 1");
  if (s.moe && (s.dp < 2 || !(s.expert_share > 0 && s.expert_share < 1) || !(s.expert_imbalance >= 0)))
    bad("MoE needs dp >= 2 (the expert-parallel group), an expert share in (0, 1) and an imbalance >= 0");
  if (s.tp_allreduce_ns <= 0 || s.all_to_all_ns <= 0) bad("transfer times must be > 0");
  if (s.virtual_stages > 1 && (s.stages < 2 || s.microbatches % s.stages != 0))
    bad("interleaved 1F1B needs >= 2 stages and micro-batches a multiple of the stages");
  if (s.forward_ns <= 0 || !(s.backward_ratio > 0) || s.p2p_ns <= 0 || s.allreduce_ns <= 0)
    bad("forward time, backward ratio and transfer times must be > 0");
  if (!s.stage_scale.empty() && static_cast<int>(s.stage_scale.size()) != s.stages)
    bad(fmt::format("{} stage scales for {} stages", s.stage_scale.size(), s.stages));
  for (const double f : s.stage_scale) {
    if (!(f > 0)) bad("stage scales must be > 0");
  }
  if (s.slow_replica < -1 || s.slow_replica >= s.dp) bad("the slow replica must be a replica of the job, or -1");
  if (s.straggler < -1 || s.straggler >= s.stages * s.dp * s.tp) bad("the straggler must be a rank of the job, or -1");
  if (!(s.replica_slowdown >= 0) || !(s.straggler_slowdown >= 0) || !(s.jitter >= 0) || s.max_offset_ns < 0)
    bad("slowdowns, jitter and offsets must be >= 0");
  if (src.layer.empty()) bad("the source gives no kernel for a layer");
  for (const PassKernel& k : src.layer) {
    if (!(k.weight > 0)) bad(fmt::format("kernel {} has weight {} (must be > 0)", k.name, k.weight));
  }
}

std::string describe(const PipelineSpec& s) {
  std::string scales;
  for (std::size_t i = 0; i < s.stage_scale.size(); ++i) scales += fmt::format("{}{}", i ? "," : "", s.stage_scale[i]);
  return fmt::format(
      "stages={} microbatches={} virtual_stages={} dp={} iterations={} layers={} forward_ns={} backward_ratio={} "
      "stage_scale={} p2p_ns={} allreduce_ns={} tp={} tp_allreduce_ns={} moe={} expert_share={} expert_imbalance={} "
      "all_to_all_ns={} slow_replica={} replica_slowdown={} straggler={} straggler_slowdown={} jitter={} "
      "max_offset_ns={} seed={}",
      s.stages, s.microbatches, s.virtual_stages, s.dp, s.iterations, s.layers, s.forward_ns, s.backward_ratio,
      scales.empty() ? "1" : scales, s.p2p_ns, s.allreduce_ns, s.tp, s.tp_allreduce_ns, s.moe, s.expert_share,
      s.expert_imbalance, s.all_to_all_ns, s.slow_replica, s.replica_slowdown, s.straggler,
      s.straggler_slowdown, s.jitter, s.max_offset_ns, s.seed);
}

JobSource job_source(const Trace& src, int kernels_per_layer) {
  if (kernels_per_layer < 1) throw std::invalid_argument("job source: kernels per layer must be >= 1");
  JobSource out;
  out.path = src.meta.path;
  const trace::OpTable& ops = src.ops;
  std::vector<std::uint8_t> is_coll(ops.size(), 0);
  for (std::size_t c = 0; c < src.collectives.size(); ++c) {
    const std::uint32_t row = src.collectives.op[c];
    is_coll[row] = 1;
    const std::string_view coll = src.strings.view(src.collectives.name[c]);
    const std::string_view kernel = src.strings.view(ops.name[row]);
    if ((coll == "sendrecv" || coll == "send" || coll == "recv") && out.p2p_kernel.starts_with("ncclDev"))
      out.p2p_kernel = kernel;
    if (coll == "allreduce" && out.allreduce_kernel.starts_with("ncclDev")) out.allreduce_kernel = kernel;
  }
  // Per compute kernel name: (total, count, first row).
  std::map<StringId, std::tuple<TimeNs, std::int64_t, std::uint32_t>> by_name;
  std::unordered_map<std::int64_t, char> launched;  // correlation ids of GPU ops
  for (std::uint32_t i = 0; i < ops.size(); ++i) {
    if (trace::is_gpu_op(ops.kind[i]) && ops.correlation[i] != kNone) launched[ops.correlation[i]] = 1;
    if (ops.kind[i] != OpKind::kKernel || is_coll[i]) continue;
    auto [it, fresh] = by_name.try_emplace(ops.name[i], 0, 0, i);
    std::get<0>(it->second) += ops.dur_ns[i];
    ++std::get<1>(it->second);
  }
  if (by_name.empty()) throw std::invalid_argument(fmt::format("{}: no compute kernel to take a layer from", src.meta.path));
  std::vector<std::pair<StringId, std::tuple<TimeNs, std::int64_t, std::uint32_t>>> top(by_name.begin(), by_name.end());
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) {
    return std::get<0>(a.second) != std::get<0>(b.second) ? std::get<0>(a.second) > std::get<0>(b.second)
                                                          : std::get<2>(a.second) < std::get<2>(b.second);
  });
  top.resize(std::min(top.size(), static_cast<std::size_t>(kernels_per_layer)));
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return std::get<2>(a.second) < std::get<2>(b.second); });
  for (const auto& [name, stats] : top) {
    const double mean = static_cast<double>(std::get<0>(stats)) / static_cast<double>(std::get<1>(stats));
    out.layer.push_back({std::string(src.strings.view(name)), std::max(mean, 1.0)});
  }
  // Host: launch calls (API calls whose correlation id has a GPU op) and the gaps between them.
  std::vector<TimeNs> call_dur, gap;
  std::map<std::pair<std::int64_t, std::int64_t>, TimeNs> last_end;  // (process, thread) -> end
  for (std::uint32_t i = 0; i < ops.size(); ++i) {
    if (!trace::is_api_call(ops.kind[i]) || !launched.contains(ops.correlation[i])) continue;
    call_dur.push_back(ops.dur_ns[i]);
    const auto key = std::make_pair(ops.process[i], ops.thread[i]);
    if (const auto it = last_end.find(key); it != last_end.end() && ops.start_ns[i] >= it->second)
      gap.push_back(ops.start_ns[i] - it->second);
    last_end[key] = ops.end_ns(i);
  }
  out.host.launch_ns = std::max<TimeNs>(1, median_or(call_dur, out.host.launch_ns));
  out.host.gap_ns = median_or(gap, out.host.gap_ns);
  if (!src.meta.gpus.empty()) out.gpu = src.meta.gpus.front();
  out.gpu.device = 0;
  return out;
}

/// Builds every rank's program into a PipelineJob: ops, edges, steps (see pipeline_job.h).
class PipelineBuilder {
 public:
  explicit PipelineBuilder(PipelineJob& job) : job_(job), s_(job.spec_) {}

  void build() {
    for (int r = 0; r < job_.ranks(); ++r) {
      job_.rank_begin_.push_back(static_cast<std::uint32_t>(job_.ops_.size()));
      st_ = RankState{};
      st_.rank = r;
      for (int it = 0; it < s_.iterations; ++it) iteration(it);
    }
    job_.rank_begin_.push_back(static_cast<std::uint32_t>(job_.ops_.size()));
    link_transfers();
    link_collectives();
  }

 private:
  struct Pass {
    bool forward;
    int chunk, microbatch;
  };
  struct RankState {
    int rank = 0;
    std::uint32_t last_call = kNoOp;
    std::map<std::int64_t, std::uint32_t> last_on_stream;
    std::uint32_t wait_from = kNoOp;  ///< The next op on the send stream waits for this op's end.
    std::int64_t next_correlation = 1;
    std::uint64_t draws = 0;
    std::uint32_t step_first = kNoOp;  ///< The iteration's first call.
    std::map<std::string, std::int64_t> seq;  ///< Next sequence number per process group.
  };
  using Key = std::pair<int, int>;  // (sender, receiver)
  using Message = std::pair<std::uint32_t, std::int64_t>;  // (op, message id)

  /// Megatron's order: tensor-parallel index innermost, then the replica, then the stage.
  int rank_of(int stage, int replica, int tp_index) const { return (stage * s_.dp + replica) * s_.tp + tp_index; }

  /// The passes of `stage` in its order: 1F1B (Narayanan et al., PipeDream-Flush, SC'21): S − s − 1
  /// warm-up forwards, then one forward and one backward, then the remaining backwards; with V > 1
  /// Megatron-LM's interleaved schedule (forward_backward_pipelining_with_interleaving).
  std::vector<Pass> schedule(int stage) const {
    const int S = s_.stages, V = s_.virtual_stages, M = s_.microbatches, total = M * V;
    int warmup = 0;
    if (V == 1) {
      warmup = std::min(S - stage - 1, M);
    } else {
      warmup = M == S ? total : std::min((S - stage - 1) * 2 + (V - 1) * S, total);
    }
    auto nth = [&](int k, bool forward) {
      const int in_group = k % (S * V);
      const int chunk = in_group / S;
      return Pass{forward, forward ? chunk : V - 1 - chunk, (k / (S * V)) * S + in_group % S};
    };
    std::vector<Pass> out;
    for (int k = 0; k < warmup; ++k) out.push_back(nth(k, true));
    for (int k = 0; k < total - warmup; ++k) {
      out.push_back(nth(k + warmup, true));
      out.push_back(nth(k, false));
    }
    for (int k = total - warmup; k < total; ++k) out.push_back(nth(k, false));
    return out;
  }

  void iteration(int it) {
    const int stage = job_.stage_of(st_.rank);
    st_.step_first = kNoOp;
    for (const Pass& p : schedule(stage)) pass(p, it);
    if (s_.dp > 1) gradient_allreduce();
    const std::uint32_t sync = device_sync();
    job_.steps_.push_back({st_.rank, it, st_.step_first, sync});
  }

  /// Pass p of this rank's stage: receive its input, its kernels, send its output.
  void pass(const Pass& p, int it) {
    const int S = s_.stages, stage = job_.stage_of(st_.rank), replica = job_.replica_of(st_.rank);
    const int t = job_.tp_of(st_.rank);
    const int vs = p.chunk * S + stage, last_vs = S * s_.virtual_stages - 1;
    // Message ids: (iteration, kind, receiving virtual stage, micro-batch).
    auto message = [&](int kind, int to_vs) {
      return ((static_cast<std::int64_t>(it) * 2 + kind) * (last_vs + 1) + to_vs) * s_.microbatches + p.microbatch;
    };
    const int prev = rank_of((vs + S - 1) % S, replica, t), next = rank_of((vs + 1) % S, replica, t);
    if (p.forward && vs > 0) recv(prev, message(0, vs));
    if (!p.forward && vs < last_vs) recv(next, message(1, vs));
    compute(p, it);
    if (p.forward && vs < last_vs) send(next, message(0, vs + 1));
    if (!p.forward && vs > 0) send(prev, message(1, vs - 1));
  }

  /// The kernels of one pass (one chunk): layers × (the source's layer; the tensor-parallel
  /// all-reduce; the MoE dispatch, experts and combine); backward: layers and kernels in reverse
  /// order, the MoE block first, the all-reduce still after the dense kernels.
  void compute(const Pass& p, int it) {
    const std::vector<PassKernel>& layer = job_.source_.layer;
    double weights = 0;
    for (const PassKernel& k : layer) weights += k.weight;
    const int stage = job_.stage_of(st_.rank);
    const double scale = s_.stage_scale.empty() ? 1.0 : s_.stage_scale[static_cast<std::size_t>(stage)];
    const double layer_ns = static_cast<double>(s_.forward_ns) * scale / s_.virtual_stages / s_.layers *
                            (p.forward ? 1.0 : s_.backward_ratio);
    const double dense_ns = s_.moe ? layer_ns * (1.0 - s_.expert_share) : layer_ns;
    const auto n = static_cast<int>(layer.size());
    for (int l = 0; l < s_.layers; ++l) {
      if (s_.moe && !p.forward) moe_block(layer_ns, it, p, s_.layers - 1 - l);
      for (int i = 0; i < n; ++i) {
        const PassKernel& k = layer[static_cast<std::size_t>(p.forward ? i : n - 1 - i)];
        compute_kernel(k.name, dense_ns * k.weight / weights);
      }
      // Megatron: the row-parallel GEMM's output (forward) and the column-parallel GEMM's input
      // gradient (backward) are all-reduced after the layer's dense kernels, both ways.
      if (s_.tp > 1) tp_allreduce();
      if (s_.moe && p.forward) moe_block(layer_ns, it, p, l);
    }
  }

  /// One compute kernel of `ns` on a stage of scale 1, slowed for the straggler and the slow
  /// replica and jittered.
  void compute_kernel(const std::string& kernel_name, double ns) {
    double f = st_.rank == s_.straggler ? 1.0 + s_.straggler_slowdown : 1.0;
    if (job_.replica_of(st_.rank) == s_.slow_replica) f *= 1.0 + s_.replica_slowdown;
    if (s_.jitter > 0)
      f *= std::max(0.0, 1.0 + s_.jitter * normal(s_.seed, static_cast<std::uint64_t>(st_.rank), st_.draws++, kJitterSalt));
    kernel(PipelineJob::kComputeStream, name(kernel_name), std::max<TimeNs>(1, std::llround(ns * f)), true);
  }

  /// Layer `layer`'s MoE part: dispatch all-to-all over the stage's expert-parallel group (its
  /// data-parallel group), the rank's experts (the source layer's heaviest kernel, expert_share
  /// of the layer; the hot rank of the group, (iteration + micro-batch + layer) mod E, takes
  /// (1 + expert_imbalance) × as long), combine all-to-all.
  void moe_block(double layer_ns, int it, const Pass& p, int layer) {
    const std::vector<PassKernel>& k = job_.source_.layer;
    const auto heaviest = std::max_element(k.begin(), k.end(), [](const auto& a, const auto& b) { return a.weight < b.weight; });
    const bool hot = (it + p.microbatch + layer) % s_.dp == job_.replica_of(st_.rank);
    group_collective(expert_group(), "all_to_all", s_.all_to_all_ns, s_.all_to_all_elems);
    compute_kernel(heaviest->name, layer_ns * s_.expert_share * (hot ? 1.0 + s_.expert_imbalance : 1.0));
    group_collective(expert_group(), "all_to_all", s_.all_to_all_ns, s_.all_to_all_elems);
  }

  void tp_allreduce() {
    std::vector<int> members;
    const int stage = job_.stage_of(st_.rank), replica = job_.replica_of(st_.rank);
    for (int t = 0; t < s_.tp; ++t) members.push_back(rank_of(stage, replica, t));
    group_collective({fmt::format("tp_stage{}_replica{}", stage, replica), members}, "allreduce", s_.tp_allreduce_ns,
                     s_.tp_allreduce_elems);
  }

  /// The data-parallel (and expert-parallel) group of this rank: same stage and TP index.
  std::pair<std::string, std::vector<int>> expert_group() const {
    std::vector<int> members;
    const int stage = job_.stage_of(st_.rank), t = job_.tp_of(st_.rank);
    for (int r = 0; r < s_.dp; ++r) members.push_back(rank_of(stage, r, t));
    return {fmt::format("dp_stage{}_tp{}", stage, t), members};
  }

  void recv(int peer, std::int64_t message) {
    const std::uint32_t op = kernel(PipelineJob::kComputeStream, name(job_.source_.p2p_kernel), s_.p2p_ns, false);
    job_.ops_[op].coll = collective({"recv", "", "", 2, s_.p2p_elems, kNone, peer, st_.rank});
    recvs_[{peer, st_.rank}].emplace_back(op, message);
  }

  void send(int peer, std::int64_t message) {
    record_and_wait();
    const std::uint32_t op = kernel(PipelineJob::kSendStream, name(job_.source_.p2p_kernel), s_.p2p_ns, false);
    job_.ops_[op].coll = collective({"send", "", "", 2, s_.p2p_elems, kNone, st_.rank, peer});
    sends_[{st_.rank, peer}].emplace_back(op, message);
  }

  /// The stage's gradient all-reduce over its data-parallel group, on the compute stream.
  void gradient_allreduce() { group_collective(expert_group(), "allreduce", s_.allreduce_ns, s_.allreduce_elems); }

  /// A collective of this rank's `group` (name, ranks) on the compute stream; its sequence number
  /// is its index among the group's collectives (the same on every member: they run one program).
  void group_collective(const std::pair<std::string, std::vector<int>>& group, const char* coll, TimeNs transfer_ns,
                        std::int64_t elems) {
    const std::string_view kernel_name = std::string_view(coll) == "all_to_all" ? job_.source_.p2p_kernel
                                                                                : job_.source_.allreduce_kernel;
    const std::uint32_t op = kernel(PipelineJob::kComputeStream, name(kernel_name), transfer_ns, false);
    const std::int64_t seq = st_.seq[group.first]++;
    const auto size = static_cast<std::int32_t>(group.second.size());
    job_.ops_[op].coll = collective({coll, group.first, rank_list(group.second), size, elems, seq, -1, -1});
    groups_[{group.first, seq}].push_back(op);
    group_size_[group.first] = size;
  }

  std::int32_t collective(PipelineJob::Coll c) {
    job_.colls_.push_back(std::move(c));
    return static_cast<std::int32_t>(job_.colls_.size() - 1);
  }

  std::uint32_t name(std::string_view n) {
    const auto it = name_ids_.find(std::string(n));
    if (it != name_ids_.end()) return it->second;
    job_.names_.emplace_back(n);
    return name_ids_[std::string(n)] = static_cast<std::uint32_t>(job_.names_.size() - 1);
  }

  std::uint32_t add_op(PipelineJob::Op op) {
    job_.ops_.push_back(op);
    return static_cast<std::uint32_t>(job_.ops_.size() - 1);
  }
  void edge(std::uint32_t from_tp, std::uint32_t to_tp, TimeNs lag) { job_.edges_.push_back({from_tp, to_tp, lag}); }
  static std::uint32_t start(std::uint32_t op) { return 2 * op; }
  static std::uint32_t end(std::uint32_t op) { return 2 * op + 1; }

  /// A host call: after the thread's previous call and a CPU gap.
  std::uint32_t call(std::string_view n, TimeNs dur) {
    PipelineJob::Op op;
    op.rank = st_.rank;
    op.name = name(n);
    op.dur = dur;
    op.correlation = st_.next_correlation++;
    const std::uint32_t id = add_op(op);
    if (st_.last_call != kNoOp) edge(end(st_.last_call), start(id), job_.source_.host.gap_ns);
    st_.last_call = id;
    if (st_.step_first == kNoOp) st_.step_first = id;
    return id;
  }

  /// A kernel and its launch call: it starts no earlier than the call's end, its stream's previous
  /// op's end and (send stream) the event it waits for.
  std::uint32_t kernel(std::int64_t stream, std::uint32_t kernel_name, TimeNs dur, bool is_compute) {
    const std::uint32_t launch = call("cudaLaunchKernel", job_.source_.host.launch_ns);
    PipelineJob::Op op;
    op.rank = st_.rank;
    op.kind = OpKind::kKernel;
    op.compute = is_compute;
    op.stream = stream;
    op.name = kernel_name;
    op.dur = dur;
    op.correlation = job_.ops_[launch].correlation;
    const std::uint32_t id = add_op(op);
    edge(start(launch), start(id), job_.source_.host.launch_ns);
    if (const auto it = st_.last_on_stream.find(stream); it != st_.last_on_stream.end()) edge(end(it->second), start(id), 0);
    if (stream == PipelineJob::kSendStream && st_.wait_from != kNoOp) {
      edge(end(st_.wait_from), start(id), 0);
      st_.wait_from = kNoOp;
    }
    st_.last_on_stream[stream] = id;
    return id;
  }

  /// cudaEventRecord on the compute stream, cudaStreamWaitEvent of the send stream on it (with
  /// its "Stream Wait Event" record): the next send waits for the compute stream's last op.
  void record_and_wait() {
    const std::uint32_t record = call("cudaEventRecord", job_.source_.host.event_call_ns);
    const std::uint32_t wait = call("cudaStreamWaitEvent", job_.source_.host.event_call_ns);
    job_.syncs_.push_back({trace::SyncKind::kStreamWaitEvent, PipelineJob::kSendStream, PipelineJob::kComputeStream,
                           job_.ops_[record].correlation});
    job_.ops_[wait].sync = static_cast<std::int32_t>(job_.syncs_.size() - 1);
    st_.wait_from = st_.last_on_stream.at(PipelineJob::kComputeStream);
  }

  /// cudaDeviceSynchronize (with its "Context Sync" record): returns after every stream's last op.
  std::uint32_t device_sync() {
    const TimeNs ret = job_.source_.host.sync_return_ns;
    const std::uint32_t id = call("cudaDeviceSynchronize", ret);
    job_.syncs_.push_back({trace::SyncKind::kContextSync, kNone, kNone, kNone});
    job_.ops_[id].sync = static_cast<std::int32_t>(job_.syncs_.size() - 1);
    for (const auto& [stream, op] : st_.last_on_stream) edge(end(op), end(id), ret);
    return id;
  }

  /// Participants end together at max(their starts) + T: S(q) → E(h) lag T, E(h) → E(q) lag 0.
  void couple(const std::vector<std::uint32_t>& participants) {
    const std::uint32_t h = participants.front();
    for (const std::uint32_t q : participants) {
      edge(start(q), end(h), job_.ops_[h].dur);
      if (q != h) edge(end(h), end(q), 0);
    }
  }

  void link_transfers() {
    for (const auto& [key, sent] : sends_) {
      const std::vector<Message>& received = recvs_[key];
      if (sent.size() != received.size()) {
        throw std::logic_error(fmt::format("pipeline job: rank {} sends {} messages to rank {}, which receives {}",
                                           key.first, sent.size(), key.second, received.size()));
      }
      for (std::size_t k = 0; k < sent.size(); ++k) {
        if (sent[k].second != received[k].second) {
          throw std::logic_error(fmt::format("pipeline job: the sends from rank {} to rank {} and their receives come "
                                             "in different orders (at the {}-th)",
                                             key.first, key.second, k));
        }
        couple({sent[k].first, received[k].first});
        ++job_.transfers_;
      }
    }
    for (const auto& [key, received] : recvs_) {
      if (!sends_.contains(key)) throw std::logic_error(fmt::format("pipeline job: rank {} receives from rank {}, which sends nothing", key.second, key.first));
    }
  }

  void link_collectives() {
    for (const auto& [key, participants] : groups_) {
      if (static_cast<std::int32_t>(participants.size()) != group_size_.at(key.first))
        throw std::logic_error(fmt::format("pipeline job: collective {} seq {} misses participants", key.first, key.second));
      couple(participants);
      ++job_.collectives_;
    }
  }

  PipelineJob& job_;
  const PipelineSpec& s_;
  RankState st_;
  std::unordered_map<std::string, std::uint32_t> name_ids_;
  std::map<Key, std::vector<Message>> sends_, recvs_;
  std::map<std::pair<std::string, std::int64_t>, std::vector<std::uint32_t>> groups_;
  std::map<std::string, std::int32_t> group_size_;
};

PipelineJob::PipelineJob(JobSource source, PipelineSpec spec) : source_(std::move(source)), spec_(std::move(spec)) {
  check(spec_, source_);
  PipelineBuilder(*this).build();
  replay();
}

// Longest path over every timepoint of the job: a start is the latest of its constraints (0 for
// a thread's first call), an end max(start + dur, its constraints).
void PipelineJob::replay() {
  const std::size_t tps = 2 * ops_.size();
  std::vector<std::uint32_t> pending(tps, 0), out_begin(tps + 1, 0);
  for (std::size_t op = 0; op < ops_.size(); ++op) ++pending[2 * op + 1];  // S -> E
  for (const Edge& e : edges_) {
    ++pending[e.to];
    ++out_begin[e.from + 1];
  }
  for (std::size_t t = 0; t < tps; ++t) out_begin[t + 1] += out_begin[t];
  std::vector<std::uint32_t> out_edge(edges_.size());
  std::vector<std::uint32_t> fill(out_begin.begin(), out_begin.end() - 1);
  for (std::uint32_t k = 0; k < edges_.size(); ++k) out_edge[fill[edges_[k].from]++] = k;
  auto for_each_out = [&](std::uint32_t t, auto&& visit) {
    if (t % 2 == 0) visit(t + 1);
    for (std::uint32_t o = out_begin[t]; o < out_begin[t + 1]; ++o) visit(edges_[out_edge[o]].to);
  };
  std::vector<std::uint32_t> order;
  try {
    order = graph::topological_order<std::uint32_t>(std::move(pending), graph::ReadyOrder::kFirstInFirstOut,
                                                    for_each_out, graph::ThrowOnCycle{});
  } catch (const graph::CycleError& e) {
    throw std::logic_error(fmt::format("pipeline job: the schedule deadlocks ({} timepoints on or behind a cycle; {})",
                                       e.blocked().size(), describe(spec_)));
  }
  time_.assign(tps, INT64_MIN);
  TimeNs lo = INT64_MAX, hi = INT64_MIN;
  for (const std::uint32_t t : order) {
    if (time_[t] == INT64_MIN) time_[t] = 0;  // a thread's first call
    if (t % 2 == 0) time_[t + 1] = std::max(time_[t + 1], time_[t] + ops_[t / 2].dur);
    for (std::uint32_t o = out_begin[t]; o < out_begin[t + 1]; ++o) {
      const Edge& e = edges_[out_edge[o]];
      time_[e.to] = std::max(time_[e.to], time_[t] + e.lag);
    }
    lo = std::min(lo, time_[t]);
    hi = std::max(hi, time_[t]);
  }
  span_ns_ = ops_.empty() ? 0 : hi - lo;
}

TimeNs PipelineJob::offset_ns(int rank) const {
  if (spec_.max_offset_ns == 0) return 0;
  const double u = uniform(spec_.seed, static_cast<std::uint64_t>(rank), 0, kOffsetSalt);
  return std::llround((2.0 * u - 1.0) * static_cast<double>(spec_.max_offset_ns));
}

TimeNs PipelineJob::compute_ns(int rank) const {
  TimeNs sum = 0;
  for (std::uint32_t i = rank_begin_.at(static_cast<std::size_t>(rank)); i < rank_begin_.at(static_cast<std::size_t>(rank) + 1); ++i)
    if (ops_[i].compute) sum += time_[2 * i + 1] - time_[2 * i];
  return sum;
}

Trace PipelineJob::rank_trace(int rank) const {
  if (rank < 0 || rank >= ranks())
    throw std::out_of_range(fmt::format("pipeline job: rank {} outside a job of {}", rank, ranks()));
  Trace t;
  const TimeNs off = offset_ns(rank);
  const std::int64_t pid = kPidBase + rank;
  for (std::uint32_t i = rank_begin_[static_cast<std::size_t>(rank)]; i < rank_begin_[static_cast<std::size_t>(rank) + 1]; ++i) {
    const Op& op = ops_[i];
    const TimeNs s = time_[2 * i] + off, d = time_[2 * i + 1] - time_[2 * i];
    const StringId n = t.strings.intern(names_[op.name]);
    if (op.kind != OpKind::kKernel) {
      t.ops.push(op.kind, s, d, n, -1, kNone, pid, pid, op.correlation, kNone);
      if (op.sync < 0) continue;
      const Sync& y = syncs_[static_cast<std::size_t>(op.sync)];
      const std::string_view kind = y.kind == trace::SyncKind::kContextSync ? "Context Sync" : "Stream Wait Event";
      const std::uint32_t row = t.ops.push(OpKind::kSync, s, d, t.strings.intern(kind), 0, y.stream, kNone, kNone, op.correlation, kNone);
      t.syncs.op.push_back(row);
      t.syncs.kind.push_back(y.kind);
      t.syncs.stream.push_back(y.stream);
      t.syncs.event_stream.push_back(y.event_stream);
      t.syncs.event_record_correlation.push_back(y.record_correlation);
      t.syncs.event_id.push_back(kNone);
      continue;
    }
    const std::uint32_t row = t.ops.push(OpKind::kKernel, s, d, n, 0, op.stream, kNone, kNone, op.correlation, kNone);
    if (op.coll < 0) continue;
    const Coll& c = colls_[static_cast<std::size_t>(op.coll)];
    trace::CollectiveTable& ct = t.collectives;
    ct.op.push_back(row);
    ct.name.push_back(t.strings.intern(c.name));
    ct.group.push_back(t.strings.intern(c.group));
    ct.group_ranks.push_back(t.strings.intern(c.group_ranks));
    ct.group_size.push_back(c.group_size);
    ct.in_nelems.push_back(c.elems);
    ct.out_nelems.push_back(c.elems);
    ct.dtype.push_back(t.strings.intern("BFloat16"));
    ct.sequence.push_back(c.seq);
    ct.src_rank.push_back(c.src);
    ct.dst_rank.push_back(c.dst);
  }
  for (const Step& st : steps_) {
    if (st.rank != rank) continue;
    const TimeNs s = time_[2 * st.first] + off;
    t.ops.push(OpKind::kAnnotation, s, time_[2 * st.last + 1] + off - s, t.strings.intern(fmt::format("ProfilerStep#{}", st.iteration)),
               -1, kNone, pid, pid, kNone, kNone);
  }
  t.meta.format = trace::TraceFormat::kKinetoJson;
  t.meta.path = fmt::format("synthetic-pipeline#rank{}", rank);
  t.meta.rank = rank;
  t.meta.world_size = ranks();
  t.meta.backend = "nccl";
  t.meta.gpus = {source_.gpu};
  t.finish();
  return t;
}

JobSource hand_worked_source() {
  JobSource s;
  s.layer = {{"gemm", 1.0}};
  s.host = HostTiming{.launch_ns = 10'000, .gap_ns = 0, .event_call_ns = 10'000, .sync_return_ns = 1'000'000};
  s.gpu.name = "NVIDIA A100-SXM4-80GB";
  return s;
}

}  // namespace emo::testing
