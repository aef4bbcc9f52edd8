#include "runtime/start_tally.h"

#include <fmt/format.h>

namespace emo::runtime {
namespace {

/// True when `a` and `b` are observed by the same op.
bool same_anchor(const policy::PackStart& a, const policy::PackStart& b) {
  if (a.observed_by != b.observed_by || a.stream != b.stream || a.ordinal != b.ordinal) return false;
  switch (a.observed_by) {
    case policy::ObservedBy::kKernel: return a.op_name == b.op_name;
    case policy::ObservedBy::kGraph: return a.graph.kernels == b.graph.kernels && a.graph.first_kernel == b.graph.first_kernel;
    case policy::ObservedBy::kNone: return false;
    default: return true;  // copies and memsets count together
  }
}

}  // namespace

StartTally::StartTally(const policy::Policy& p) {
  for (const auto& g : p.gpus) {
    order_.push_back(g.device);
    auto& covers = covers_[g.device];
    covers.resize(g.packs.size());
    for (std::size_t k = 0; k < g.packs.size(); ++k) {
      for (std::size_t j = 0; j < g.packs.size(); ++j) {
        if (j == k || same_anchor(g.packs[k].start, g.packs[j].start)) covers[k].push_back(static_cast<std::int32_t>(j));
      }
    }
  }
}

void StartTally::record(const PackStarted& p) {
  const auto it = covers_.find(p.device);
  if (it == covers_.end() || p.pack < 0 || static_cast<std::size_t>(p.pack) >= it->second.size()) return;
  auto& packs = seen_[p.device][p.iteration];
  for (std::int32_t j : it->second[static_cast<std::size_t>(p.pack)]) packs.insert(j);
}

std::vector<std::int64_t> StartTally::seen(std::int32_t device) const {
  const auto it = seen_.find(device);
  if (it == seen_.end() || it->second.empty()) return {};
  std::vector<std::int64_t> out(static_cast<std::size_t>(it->second.rbegin()->first + 1), 0);
  for (const auto& [iteration, packs] : it->second) out[static_cast<std::size_t>(iteration)] = static_cast<std::int64_t>(packs.size());
  return out;
}

std::int64_t StartTally::expected(std::int32_t device) const {
  const auto it = covers_.find(device);
  return it == covers_.end() ? 0 : static_cast<std::int64_t>(it->second.size());
}

std::string seen_summary(const std::vector<std::int64_t>& s, std::int64_t expected) {
  if (s.empty()) return fmt::format("none seen of {} per iteration", expected);
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t j = i;
    while (j + 1 < s.size() && s[j + 1] == s[i]) ++j;
    out += fmt::format("{}{}/{} in {} {}", out.empty() ? "" : ", ", s[i], expected,
                       i == j ? "iteration" : "iterations", i == j ? fmt::format("{}", i) : fmt::format("{}-{}", i, j));
    i = j + 1;
  }
  return out;
}

std::string seen_warning(std::int32_t device, const std::vector<std::int64_t>& s) {
  if (s.empty()) {
    return fmt::format("policy section {}: no pack start was seen in any iteration: the policy switched no clock "
                       "at the packs of this GPU (does the command run the traced workload?)", device);
  }
  std::vector<std::size_t> none;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 0) none.push_back(i);
  }
  if (none.empty()) return "";
  std::string list;
  for (std::size_t i = 0; i < none.size() && i < 10; ++i) list += fmt::format("{}{}", i ? ", " : "", none[i]);
  if (none.size() > 10) list += ", ...";
  return fmt::format("policy section {}: no pack start was seen in {} of {} iterations ({}): their packs were switched "
                     "only by prediction from earlier iterations, if at all", device, none.size(), s.size(), list);
}

}  // namespace emo::runtime
