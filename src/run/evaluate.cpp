#include "zotrain/run/evaluate.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "zotrain/run/engine.hpp"
#include "run_state.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/run/checkpoint.hpp"

namespace zt::run {

int run_eval(const EvalRequest& req) {
  namespace fs = std::filesystem;
  const bool dir = fs::is_directory(req.target);
  const std::string ckpt = checkpoint_of(req.target);
  const TensorFile file = read_safetensors(ckpt);  // the weights; no optimizer state needed
  config::ExperimentConfig cfg;
  if (!req.config_path.empty()) {
    cfg = config::load_config(req.config_path, req.overrides);
  } else if (dir && fs::exists(req.target + "/config.json")) {
    cfg = config::load_config(req.target + "/config.json", req.overrides);
  } else {
    cfg = config::parse_config(checkpoint_meta(file, "config", ckpt), ckpt, req.overrides);
  }
  for (const std::string& w : cfg.warnings) spdlog::warn("{}", w);
  cfg.optimizer.name = config::OptimizerKind::kSgd;  // evaluation keeps no optimizer state

  const int batch = static_cast<int>(config::resolve_batch_size(cfg));
  std::unique_ptr<Engine> engine = cfg.model.precision == config::Precision::kInt8
                                       ? make_int8_engine(cfg, batch, 1)
                                       : make_fp32_engine(cfg, batch, 1);
  check_checkpoint(file, ckpt, cfg, engine->partition());
  engine->load(file, ckpt);  // dtypes and shapes by name, finite values, no unknown tensors
  const RunState st = restore_run_state(file, ckpt);  // metadata that contradicts itself: refused
  const std::string root = config::resolve_path(cfg, cfg.data.root);
  if (req.validation && !cfg.data.validation)
    throw Error(ckpt + ": --validation needs data.validation (the number of training samples " +
                "held out), which the run's config does not set; add --set data.validation=N");
  RunData rd = load_run_data(cfg, root, batch, engine->input_floats(), seeds::data(cfg.seed));
  if (req.config_path.empty() && req.overrides.empty())  // the run's own data and batch size
    check_run_state(st, ckpt, cfg, rd.train->batches_per_epoch(), batch);
  const EvalResult ev = engine->evaluate(req.validation ? *rd.val : *rd.test);
  const char* split = req.validation ? "validation" : "test";
  const int samples = req.validation ? rd.val_count : rd.test_count;

  // The JSON keys follow the run's own records: test_* for the test split, val_* for validation.
  const std::string key = req.validation ? "val" : "test";
  if (req.json) {
    const nlohmann::json j = {{"checkpoint", ckpt},
                              {"dataset", config::name(cfg.data.dataset)},
                              {"data_root", root},
                              {"split", split},
                              {"samples", samples},
                              {key + "_loss", ev.loss},
                              {key + "_accuracy", ev.accuracy}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%s: %s accuracy %.2f%%, %s loss %.4f on %d %s %s samples\n", ckpt.c_str(), split,
                ev.accuracy, split, ev.loss, samples,
                std::string(config::name(cfg.data.dataset)).c_str(), split);
  }
  return 0;
}

}  // namespace zt::run
