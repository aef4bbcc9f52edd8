// EMO's version string (the CMake project version), for policies, traces and `emo --version`.
#pragma once

#include <string_view>

namespace emo {

/// The version of this build, e.g. "0.1.0" (CMakeLists.txt `project(emo VERSION ...)`).
std::string_view version() noexcept;

}  // namespace emo
