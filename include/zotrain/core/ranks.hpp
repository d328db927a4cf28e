// The processes one run is spread over (data-parallel training, docs/design.md §15) and the
// collectives a step needs. A run started without mpirun has one rank, and every collective is
// a no-op; under mpirun the implementation is src/dist/ (MPI). Integer-only, like the int8
// trainer that includes it: times are integer nanoseconds.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace zt {

// What the collectives moved, by what they were for (summary.json's parallel.exchange).
enum class Exchange { kActivations, kBatchMax, kControl, kCount };
inline constexpr int kNumExchanges = static_cast<int>(Exchange::kCount);
const char* exchange_key(Exchange e);  // "activations", "batch_max", "control"

struct ExchangeStats {
  std::array<std::uint64_t, kNumExchanges> bytes{};  // received by this rank
  std::array<std::uint64_t, kNumExchanges> calls{};
  std::int64_t ns = 0;  // wall time inside collectives
  ExchangeStats& operator+=(const ExchangeStats& o);
  ExchangeStats operator-(const ExchangeStats& o) const;
};

class Ranks {
 public:
  virtual ~Ranks() = default;
  virtual int rank() const { return 0; }
  virtual int size() const { return 1; }
  bool single() const { return size() == 1; }

  // Every rank holds rows [begin[r], begin[r + 1]) of `rows` (row_bytes each, begin has size()
  // + 1 entries, begin[0] = 0); afterwards every rank holds all of them, bit for bit.
  virtual void gather_rows(void* /*rows*/, std::size_t /*row_bytes*/, const int* /*begin*/,
                           Exchange /*what*/) {}
  // The maximum of every rank's value (exact, whatever the order).
  virtual std::uint32_t max(std::uint32_t v, Exchange /*what*/) { return v; }
  // Waits until every rank arrives.
  virtual void barrier() {}

  const ExchangeStats& stats() const { return stats_; }

 protected:
  ExchangeStats stats_;
};

// The one-rank instance (a run without mpirun).
Ranks& single_rank();

// The rows of a batch of n samples rank r computes: whole chunks of `chunk` samples, chunks
// dealt out in order (rank r: chunks [r·k/N, (r+1)·k/N) of k), so that a rank's rows are those
// a single process runs as the same chunks. begin has N + 1 entries.
void shard_rows(int n, int chunk, int ranks, int* begin);

}  // namespace zt
