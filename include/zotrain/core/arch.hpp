// The network architectures, one enum for every layer: the config's model.arch (its text and
// capabilities in config/catalogue.hpp) and the factory that builds it (nn/architectures.hpp).
#pragma once

namespace zt {

enum class Arch { kLeNet5, kPointNet };

}  // namespace zt
