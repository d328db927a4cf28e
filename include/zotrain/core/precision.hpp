// The arithmetic a network trains in: FP32, or int8 with integer arithmetic only (NITI,
// docs/design.md §5). One enum for every layer (the config's model.precision, the memory model).
#pragma once

namespace zt {

enum class Precision { kFp32, kInt8 };

}  // namespace zt
