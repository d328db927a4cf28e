// Fuzz target: the experiment config parser and the --set override parser (config/config.hpp).
// Input: leading lines "--set KEY=VALUE" are the overrides, the rest is the config file's text.
// Every input must either give a config or throw zt::Error (any other exception or a crash is a
// finding); an accepted config's canonical form (what config.json and checkpoints hold, and what
// `zotrain eval` and --resume read back) must parse again to the same canonical form.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "zotrain/config/config.hpp"
#include "zotrain/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  constexpr std::string_view kSet = "--set ";
  while (in.starts_with(kSet)) {
    const std::size_t nl = in.find('\n');
    overrides.emplace_back(in.substr(kSet.size(), nl == std::string_view::npos
                                                      ? std::string_view::npos
                                                      : nl - kSet.size()));
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  }
  zt::config::ExperimentConfig cfg;
  try {
    cfg = zt::config::parse_config(std::string(in), "fuzz.json", overrides);
  } catch (const zt::Error&) {
    return 0;
  }
  const std::string canonical = zt::config::to_json_text(cfg);
  std::string again;
  try {
    again = zt::config::to_json_text(zt::config::parse_config(canonical, "config.json", {}));
  } catch (const zt::Error& e) {
    std::fprintf(stderr, "canonical form refused: %s\n%s\n", e.what(), canonical.c_str());
    ZT_FUZZ_EXPECT(false, "an accepted config's canonical form must parse again");
  }
  ZT_FUZZ_EXPECT(again == canonical, "the canonical form must be a fixed point");
  // What a run resolves from the config next (each may refuse it with zt::Error).
  try {
    (void)zt::config::resolve_batch_size(cfg);
    const zt::config::Schedule b_bp = zt::config::resolve_b_bp(cfg, 1);
    const zt::config::Schedule p_zero = zt::config::resolve_p_zero(cfg);
    for (std::int64_t epoch : {0, 1, 19, 20, 1000}) {
      (void)b_bp.at(epoch);
      (void)cfg.int8.b_zo.at(epoch);
      (void)p_zero.at(epoch);
    }
    for (int layers : {1, 5, 12}) {
      const int c = zt::config::resolve_partition(cfg.method, layers);
      (void)zt::config::effective_method(c, layers);
    }
  } catch (const zt::Error&) {
  }
  return 0;
}
