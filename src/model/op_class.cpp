#include "model/op_class.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace emo::model {
namespace {

constexpr std::array kCommunication{"nccl"};
constexpr std::array kCompute{"gemm", "gemv", "matmul", "cutlass", "cublas", "xmma", "conv", "cudnn", "wgrad",
                              "dgrad", "fprop", "attention", "attn", "fmha", "flash", "sm80_", "sm90_", "nvjet",
                              "mm_", "hmma", "s884", "s1688", "s16816"};
constexpr std::array kMemory{"elementwise", "reduce", "softmax", "norm", "copy", "fill", "cat", "index",
                             "gather", "scatter", "embedding", "dropout", "adam", "sgd", "transpose",
                             "vectorized", "unrolled", "memcpy", "memset"};

template <std::size_t N>
bool contains_any(const std::string& lower, const std::array<const char*, N>& needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](const char* n) { return lower.find(n) != std::string::npos; });
}

}  // namespace

std::string_view op_class_name(OpClass c) {
  switch (c) {
    case OpClass::kCompute: return "compute";
    case OpClass::kMemory: return "memory";
    case OpClass::kCommunication: return "communication";
    case OpClass::kMixed: return "mixed";
  }
  return "mixed";
}

OpClass classify_op(trace::OpKind kind, std::string_view name) {
  if (kind == trace::OpKind::kMemcpy || kind == trace::OpKind::kMemset) return OpClass::kMemory;
  if (kind != trace::OpKind::kKernel) return OpClass::kMixed;
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (contains_any(lower, kCommunication)) return OpClass::kCommunication;
  if (contains_any(lower, kCompute)) return OpClass::kCompute;
  if (contains_any(lower, kMemory)) return OpClass::kMemory;
  return OpClass::kMixed;
}

double clock_sensitivity(OpClass c) {
  switch (c) {
    case OpClass::kCompute: return 1.0;
    case OpClass::kMemory: return 0.2;
    case OpClass::kCommunication: return 0.0;
    case OpClass::kMixed: return 0.5;
  }
  return 0.5;
}

std::vector<float> clock_sensitivity(const trace::Trace& trace) {
  const std::size_t n = trace.ops.size();
  std::vector<float> out(n, 0.0F);
  std::vector<float> kernel_of_name(trace.strings.size(), -1.0F);  // a kernel name's, once classified (-1: not yet)
  for (std::size_t i = 0; i < n; ++i) {
    const trace::OpKind k = trace.ops.kind[i];
    if (k != trace::OpKind::kKernel && k != trace::OpKind::kMemcpy && k != trace::OpKind::kMemset) continue;
    if (k != trace::OpKind::kKernel) {
      out[i] = static_cast<float>(clock_sensitivity(OpClass::kMemory));  // classify_op: copies and sets are memory
      continue;
    }
    float& known = kernel_of_name.at(trace.ops.name[i]);
    if (known < 0) known = static_cast<float>(clock_sensitivity(classify_op(k, trace.strings.view(trace.ops.name[i]))));
    out[i] = known;
  }
  return out;
}

}  // namespace emo::model
