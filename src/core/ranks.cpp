#include "zotrain/core/ranks.hpp"

namespace zt {

const char* exchange_key(Exchange e) {
  switch (e) {
    case Exchange::kActivations: return "activations";
    case Exchange::kBatchMax: return "batch_max";
    case Exchange::kControl: return "control";
    case Exchange::kCount: break;
  }
  return "?";
}

ExchangeStats& ExchangeStats::operator+=(const ExchangeStats& o) {
  for (int i = 0; i < kNumExchanges; ++i) {
    bytes[static_cast<std::size_t>(i)] += o.bytes[static_cast<std::size_t>(i)];
    calls[static_cast<std::size_t>(i)] += o.calls[static_cast<std::size_t>(i)];
  }
  ns += o.ns;
  return *this;
}

ExchangeStats ExchangeStats::operator-(const ExchangeStats& o) const {
  ExchangeStats d = *this;
  for (int i = 0; i < kNumExchanges; ++i) {
    d.bytes[static_cast<std::size_t>(i)] -= o.bytes[static_cast<std::size_t>(i)];
    d.calls[static_cast<std::size_t>(i)] -= o.calls[static_cast<std::size_t>(i)];
  }
  d.ns -= o.ns;
  return d;
}

Ranks& single_rank() {
  static Ranks one;
  return one;
}

void shard_rows(int n, int chunk, int ranks, int* begin) {
  const long long chunks = (n + chunk - 1) / chunk;
  for (int r = 0; r <= ranks; ++r) {
    const long long c = chunks * r / ranks;
    const long long row = c * chunk;
    begin[r] = static_cast<int>(row < n ? row : n);
  }
}

}  // namespace zt
