// The registry of training methods: one list drives the factory, the CLI's choices and help
// text, and the parametrised tests.
#pragma once

#include <string>
#include <vector>

namespace zt::train {

struct MethodInfo {
  const char* name;     // config value of method.name
  const char* summary;  // one line for --help
  // Partition rule: "0" (C forced to 0), "L" (C forced to L) or "0<C<L".
  const char* partition_rule;
};

const std::vector<MethodInfo>& methods();
const MethodInfo* find_method(const std::string& name);  // nullptr if unknown

}  // namespace zt::train
