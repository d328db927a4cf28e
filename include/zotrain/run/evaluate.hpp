// `zotrain eval`: a checkpoint's loss and accuracy on a data set's test split (or on the
// validation split that data.validation holds out of the training set), without training or
// writing anything. The checkpoint is a run directory (its checkpoint.safetensors and
// config.json) or a checkpoint file (with the config it carries); --set overrides apply, e.g.
// data.root or data.test_limit to evaluate on other data.
#pragma once

#include <string>
#include <vector>

#include "zotrain/config/config.hpp"

namespace zt::run {

struct EvalRequest {
  std::string target;                  // run directory or checkpoint file
  std::string config_path;             // optional: a config instead of the checkpoint's own
  std::vector<std::string> overrides;  // --set
  bool json = false;                   // one JSON object on stdout instead of a line
  bool validation = false;             // the data.validation split instead of the test split
  int threads = 1;                     // --threads; 0 = every core
};

// Prints the result on stdout; returns 0. Bad input throws zt::Error naming the file or key.
int run_eval(const EvalRequest& request);

}  // namespace zt::run
