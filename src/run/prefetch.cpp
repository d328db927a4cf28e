#include "prefetch.hpp"

#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace zt::run {
namespace {

class Prefetcher final : public BatchSource {
 public:
  Prefetcher(std::unique_ptr<BatchSource> inner, int batch)
      : inner_(std::move(inner)),
        cap_(inner_->sample_floats() * static_cast<std::size_t>(batch)),
        labels_(static_cast<std::size_t>(batch)),
        worker_([this] { work(); }) {}

  ~Prefetcher() override {
    {
      const std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  int batches_per_epoch() const override { return inner_->batches_per_epoch(); }
  std::size_t sample_floats() const override { return inner_->sample_floats(); }

  void start_epoch(int epoch) override {
    std::unique_lock<std::mutex> lock(m_);
    idle(lock);
    ready_ = want_ = -1;
    inner_->start_epoch(epoch);
  }

  int fill(int index, float* x, std::uint8_t* labels) override {
    return take(index, false, x, labels);
  }
  int fill_raw(int index, std::uint8_t* raw, std::uint8_t* labels) override {
    return take(index, true, raw, labels);
  }

 private:
  void idle(std::unique_lock<std::mutex>& lock) {
    cv_.wait(lock, [this] { return !busy_ && want_ < 0; });
  }

  int take(int index, bool raw, void* out, std::uint8_t* labels) {
    std::unique_lock<std::mutex> lock(m_);
    idle(lock);
    int n;
    if (ready_ == index && ready_raw_ == raw) {
      ready_ = -1;
      if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
      n = ready_n_;
      const std::size_t per = inner_->sample_floats() * (raw ? 1 : sizeof(float));
      std::memcpy(out, raw ? static_cast<void*>(bytes_.data()) : floats_.data(),
                  static_cast<std::size_t>(n) * per);
      std::memcpy(labels, labels_.data(), static_cast<std::size_t>(n));
    } else {  // not the batch prefetched (the first of an epoch, or out of order): read it now
      ready_ = -1;
      error_ = nullptr;
      n = raw ? inner_->fill_raw(index, static_cast<std::uint8_t*>(out), labels)
              : inner_->fill(index, static_cast<float*>(out), labels);
    }
    if (index + 1 < inner_->batches_per_epoch()) {
      want_ = index + 1;
      want_raw_ = raw;
      cv_.notify_all();
    }
    return n;
  }

  void work() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || want_ >= 0; });
      if (stop_) return;
      const int index = std::exchange(want_, -1);
      const bool raw = want_raw_;
      busy_ = true;
      lock.unlock();
      int n = 0;
      std::exception_ptr error;
      try {
        if (raw) {
          bytes_.resize(cap_);
          n = inner_->fill_raw(index, bytes_.data(), labels_.data());
        } else {
          floats_.resize(cap_);
          n = inner_->fill(index, floats_.data(), labels_.data());
        }
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      busy_ = false;
      ready_ = index;
      ready_raw_ = raw;
      ready_n_ = n;
      error_ = error;
      cv_.notify_all();
    }
  }

  std::unique_ptr<BatchSource> inner_;
  std::size_t cap_;                    // values in one batch
  std::vector<float> floats_;          // the prefetched batch, FP32 or raw (each allocated
  std::vector<std::uint8_t> bytes_;    // when first asked for)
  std::vector<std::uint8_t> labels_;
  std::mutex m_;
  std::condition_variable cv_;
  int want_ = -1, ready_ = -1, ready_n_ = 0;  // batch to fill next; batch in the buffer
  bool want_raw_ = false, ready_raw_ = false, busy_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread worker_;  // last: started once everything above exists
};

}  // namespace

std::unique_ptr<BatchSource> prefetched(std::unique_ptr<BatchSource> inner, int batch) {
  return std::make_unique<Prefetcher>(std::move(inner), batch);
}

std::size_t prefetch_bytes(std::size_t sample_floats, int batch, bool raw) {
  return sample_floats * static_cast<std::size_t>(batch) * (raw ? 1 : sizeof(float)) +
         static_cast<std::size_t>(batch);
}

}  // namespace zt::run
