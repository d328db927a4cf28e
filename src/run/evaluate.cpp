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
#include "zotrain/run/experiment.hpp"

namespace zt::run {

int run_eval(const EvalRequest& req) {
  namespace fs = std::filesystem;
  const bool dir = fs::is_directory(req.target);
  const std::string ckpt = checkpoint_of(req.target);
  const TensorFile file = read_safetensors(ckpt);  // the weights; no optimizer state needed
  config::ExperimentConfig cfg;
  // The config the run trained with: its config.json, else the one its checkpoint carries.
  const bool own_config = dir && fs::exists(req.target + "/config.json");
  auto run_config = [&] {
    return own_config ? config::load_config(req.target + "/config.json", {})
                      : config::parse_config(checkpoint_meta(file, "config", ckpt), ckpt, {});
  };
  if (!req.config_path.empty()) {
    cfg = config::load_config(req.config_path, req.overrides);
  } else if (own_config) {
    cfg = config::load_config(req.target + "/config.json", req.overrides);
  } else {
    cfg = config::parse_config(checkpoint_meta(file, "config", ckpt), ckpt, req.overrides);
  }
  for (const std::string& w : cfg.warnings) spdlog::warn("{}", w);
  cfg.optimizer.name = config::OptimizerKind::kSgd;  // evaluation keeps no optimizer state

  if (req.validation && (!req.config_path.empty() || !req.overrides.empty())) {
    // Another hold-out than the run's scores samples the run trained on.
    const config::ExperimentConfig run = run_config();
    const auto text = [](const std::optional<std::int64_t>& v) {
      return v ? std::to_string(*v) : std::string("null");
    };
    const auto differs = [&](const char* key, const std::optional<std::int64_t>& a,
                             const std::optional<std::int64_t>& b) {
      if (a == b) return;
      throw Error(ckpt + ": --validation with " + key + " = " + text(a) + " but the run trained " +
                  "with " + key + " = " + text(b) + " (" + (own_config ? "its config.json" : "its "
                  "checkpoint's config") + "): that split would hold samples the run trained on; "
                  "evaluate with the run's own " + key);
    };
    differs("data.validation", cfg.data.validation, run.data.validation);
    differs("data.train_limit", cfg.data.train_limit, run.data.train_limit);
    differs("data.subset", cfg.data.subset, run.data.subset);
    if (cfg.data.dataset != run.data.dataset || cfg.seed != run.seed ||
        cfg.data.subset_seed != run.data.subset_seed)
      throw Error(ckpt + ": --validation with another data.dataset, seed or data.subset_seed "
                  "than the run's: that split would not be the one the run held out");
  }

  const int threads = use_threads(req.threads);
  const int batch = static_cast<int>(config::resolve_batch_size(cfg));
  std::unique_ptr<Engine> engine = cfg.model.precision == config::Precision::kInt8
                                       ? make_int8_engine(cfg, batch, threads)
                                       : make_fp32_engine(cfg, batch, threads);
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
