// Fuzz target: the safetensors checkpoint reader (run/checkpoint.hpp) and what --resume,
// --init-from and `zotrain eval` do with what it returns: check the metadata and the run state
// against the run, load the weights into an FP32 and an int8 LeNet-5 (shapes, values, names),
// parse the stored config. Every input must be used or refused with zt::Error; anything else is a finding.
// Input: a 4-byte little-endian count Z (at most 1 MiB), then the file's bytes; the harness
// appends Z zero bytes to the file. A checkpoint's header is a few KB but its weights are 430 KB:
// the seeds hold real headers with Z = the data size, so mutations reach the loading code without
// spending their time in weight bytes (Z = 0 gives the file exactly as written).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "zotrain/run/engine.hpp"
#include "fuzz_support.hpp"
#include "run_state.hpp"
#include "zotrain/config/config.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/run/checkpoint.hpp"

namespace {

constexpr std::size_t kMaxZeros = std::size_t{1} << 20;
constexpr std::int64_t kStepsPerEpoch = 8;  // the run state checked as for a set of 64 samples

struct Run {
  zt::config::ExperimentConfig cfg;
  std::unique_ptr<zt::run::Engine> engine;
};

Run make_run(const char* precision) {
  Run r;
  r.cfg = zt::config::parse_config(
      std::string(R"({"model": {"precision": ")") + precision +
          R"("}, "method": {"partition": "zo-feat-cls1"}, "optimizer": {"name": "sgd"},
              "train": {"batch_size": 8, "threads": 1}})",
      "fuzz-run", {});
  r.engine = r.cfg.model.precision == zt::config::Precision::kInt8
                 ? zt::run::make_int8_engine(r.cfg, 8, 1)
                 : zt::run::make_fp32_engine(r.cfg, 8, 1);
  return r;
}

void resume_into(Run& r, const std::string& path) {
  try {
    const zt::run::TensorFile f = zt::run::read_checkpoint(path);
    zt::run::check_checkpoint(f, path, r.cfg, r.engine->partition());
    const zt::run::RunState st = zt::run::restore_run_state(f, path);
    zt::run::check_run_state(st, path, r.cfg, kStepsPerEpoch, 8);
    r.engine->load(f, path);
  } catch (const zt::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Run fp32 = make_run("fp32");
  static Run int8 = make_run("int8");
  std::size_t zeros = 0;
  if (size >= 4) {
    zeros = std::size_t{data[0]} | std::size_t{data[1]} << 8 | std::size_t{data[2]} << 16 |
            std::size_t{data[3]} << 24;
    zeros = zeros > kMaxZeros ? 0 : zeros;
    data += 4;
    size -= 4;
  }
  const std::string path =
      zt::fuzz::write_input("checkpoint.safetensors", data, size, zeros);
  zt::run::TensorFile file;
  try {
    file = zt::run::read_safetensors(path);
  } catch (const zt::Error&) {
    return 0;
  }
  // --init-from: the weights only, converted to either precision.
  for (Run* r : {&fp32, &int8}) {
    try {
      r->engine->init_from(file, path);
    } catch (const zt::Error&) {
    }
  }
  // --resume: the run state and the weights of the same model.
  resume_into(fp32, path);
  resume_into(int8, path);
  // zotrain eval CHECKPOINT: the config stored in the checkpoint.
  try {
    (void)zt::config::parse_config(zt::run::checkpoint_meta(file, "config", path), path, {});
  } catch (const zt::Error&) {
  }
  return 0;
}
