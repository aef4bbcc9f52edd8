// Classes of GPU work by how their time responds to the SM clock (docs/design.md §4, issue 4):
// compute-bound (GEMM, convolution, attention), memory-bound (elementwise, reduction, copies),
// communication-bound (NCCL collectives and peer copies), and mixed (anything not recognised).
#pragma once

#include <string_view>
#include <vector>

#include "trace/trace.h"

namespace emo::model {

enum class OpClass { kCompute, kMemory, kCommunication, kMixed };

inline constexpr int kOpClassCount = 4;

/// "compute", "memory", "communication", "mixed".
std::string_view op_class_name(OpClass c);

/// Classifies one GPU op from its kind and name (case-insensitive substring rules).
///  - memcpy / memset                                   → memory (copies are bandwidth-bound);
///  - names with "nccl" (collectives, send/recv)        → communication;
///  - gemm, gemv, matmul, cutlass, cublas, xmma, conv, cudnn, wgrad, dgrad, fprop, attention,
///    attn, fmha, flash, sm80_/sm90_ tensor-core kernels, nvjet, "mm_" Triton matmuls → compute;
///  - elementwise, reduce, softmax, norm, copy, fill, cat, index, gather, scatter, embedding,
///    dropout, adam, sgd, transpose, vectorized, unrolled (PyTorch's elementwise kernels),
///    memcpy/memset-like names                          → memory;
///  - anything else                                     → mixed.
/// Compute rules are tried before memory rules ("gemm_reduce" is compute). Host kinds (runtime,
/// driver, framework ops) are not GPU work; they classify as mixed.
OpClass classify_op(trace::OpKind kind, std::string_view name);

/// A prior of how a class's time responds to the SM clock, 0 (not at all) to 1 (∝ 1/f): compute
/// 1, mixed 0.5, memory 0.2, communication 0. Used only to find phases (where the mix changes)
/// for pack::PackOptions::op_sensitivity. An ordinal prior, not fitted: compute-bound work slows
/// most with the clock, then unrecognised (mixed) work, memory-bound work, communication
/// (docs/design.md §4); the packs' own models are fitted from their profiles.
double clock_sensitivity(OpClass c);

/// clock_sensitivity(classify_op(...)) per op row of `trace` (0 for host ops); each kernel name
/// classified once. O(ops + strings).
std::vector<float> clock_sensitivity(const trace::Trace& trace);

}  // namespace emo::model
