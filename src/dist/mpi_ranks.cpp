// zt::Ranks over MPI (docs/design.md §15). Every collective keeps the result independent of the
// rank count: rows are gathered as bytes (MPI_Allgatherv, in place) and maxima are exact.
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <vector>

#include "zotrain/core/error.hpp"
#include "zotrain/dist/mpi.hpp"

namespace zt::dist {
namespace {

bool g_joined = false;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// An environment variable an MPI launcher sets for each process it starts.
bool started_by_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

class MpiRanks final : public Ranks {
 public:
  MpiRanks() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    counts_.resize(static_cast<std::size_t>(size_));
    displs_.resize(static_cast<std::size_t>(size_));
  }
  ~MpiRanks() override {
    g_joined = false;
    MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void gather_rows(void* rows, std::size_t row_bytes, const int* begin, Exchange what) override {
    const std::int64_t t0 = now_ns();
    std::uint64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      const std::size_t bytes = static_cast<std::size_t>(begin[r + 1] - begin[r]) * row_bytes;
      const std::size_t at = static_cast<std::size_t>(begin[r]) * row_bytes;
      ZT_CHECK_MSG(bytes <= 0x7fffffffu && at <= 0x7fffffffu, "a gather beyond 2 GiB");
      counts_[static_cast<std::size_t>(r)] = static_cast<int>(bytes);
      displs_[static_cast<std::size_t>(r)] = static_cast<int>(at);
      if (r != rank_) total += bytes;
    }
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rows, counts_.data(), displs_.data(),
                   MPI_BYTE, MPI_COMM_WORLD);
    note(what, total, t0);
  }

  std::uint32_t max(std::uint32_t v, Exchange what) override {
    const std::int64_t t0 = now_ns();
    std::uint32_t m = 0;
    MPI_Allreduce(&v, &m, 1, MPI_UINT32_T, MPI_MAX, MPI_COMM_WORLD);
    note(what, sizeof(m) * static_cast<std::uint64_t>(size_ - 1), t0);
    return m;
  }

  void barrier() override {
    const std::int64_t t0 = now_ns();
    MPI_Barrier(MPI_COMM_WORLD);
    note(Exchange::kControl, 0, t0);
  }

 private:
  void note(Exchange what, std::uint64_t bytes, std::int64_t t0) {
    stats_.bytes[static_cast<std::size_t>(what)] += bytes;
    stats_.calls[static_cast<std::size_t>(what)] += 1;
    stats_.ns += now_ns() - t0;
  }

  int rank_ = 0, size_ = 1;
  std::vector<int> counts_, displs_;
};

}  // namespace

bool built_with_mpi() { return true; }

std::unique_ptr<Ranks> join(int* argc, char*** argv) {
  if (!started_by_launcher()) return nullptr;
  int provided = 0;
  // Only the main thread calls MPI (OpenMP threads and the prefetch thread never do).
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  g_joined = true;
  return std::make_unique<MpiRanks>();
}

void abort_job(int code) {
  if (g_joined) MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace zt::dist
