#include "core/version.h"

namespace emo {

std::string_view version() noexcept { return EMO_VERSION; }

}  // namespace emo
