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

}  // namespace emo::model
