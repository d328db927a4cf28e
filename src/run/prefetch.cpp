#include "zotrain/run/prefetch.hpp"

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
        batch_(static_cast<std::size_t>(batch)),
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
    return copy_out(take(index, x, labels), x, labels);
  }
  int fill_raw(int index, std::uint8_t* raw, std::uint8_t* labels) override {
    return copy_out(take_raw(index, raw, labels), raw, labels);
  }
  View<float> take(int index, float* x, std::uint8_t* labels) override {
    const int n = hand_out(index, false, x, labels);
    if (handed_ < 0) return {x, labels, n};
    return {slots_[handed_].floats.data(), slots_[handed_].labels.data(), n};
  }
  View<std::uint8_t> take_raw(int index, std::uint8_t* raw, std::uint8_t* labels) override {
    const int n = hand_out(index, true, raw, labels);
    if (handed_ < 0) return {raw, labels, n};
    return {slots_[handed_].bytes.data(), slots_[handed_].labels.data(), n};
  }

 private:
  struct Slot {
    std::vector<float> floats;  // an FP32 or a raw batch (each allocated when first asked for)
    std::vector<std::uint8_t> bytes;
    std::vector<std::uint8_t> labels;
  };

  void idle(std::unique_lock<std::mutex>& lock) {
    cv_.wait(lock, [this] { return !busy_ && want_ < 0; });
  }

  template <class T>
  int copy_out(const View<T>& v, T* out, std::uint8_t* labels) {
    if (v.x != out) std::memcpy(out, v.x, static_cast<std::size_t>(v.n) * inner_->sample_floats() * sizeof(T));
    if (v.labels != labels) std::memcpy(labels, v.labels, static_cast<std::size_t>(v.n));
    return v.n;
  }

  // Batch `index`: from the prefetched slot when it holds it (handed_ = that slot), else read
  // now into out / labels (handed_ = −1); then asks for index + 1 in the other slot.
  int hand_out(int index, bool raw, void* out, std::uint8_t* labels) {
    std::unique_lock<std::mutex> lock(m_);
    idle(lock);
    int n;
    if (ready_ == index && ready_raw_ == raw) {
      ready_ = -1;
      if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
      n = ready_n_;
      handed_ = ready_slot_;
    } else {  // not the batch prefetched (the first of an epoch, or out of order): read it now
      ready_ = -1;
      error_ = nullptr;
      handed_ = -1;
      n = raw ? inner_->fill_raw(index, static_cast<std::uint8_t*>(out), labels)
              : inner_->fill(index, static_cast<float*>(out), labels);
    }
    if (index + 1 < inner_->batches_per_epoch()) {
      want_ = index + 1;
      want_raw_ = raw;
      want_slot_ = handed_ == 0 ? 1 : 0;  // never the slot just handed out
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
      const int slot = want_slot_;
      busy_ = true;
      lock.unlock();
      int n = 0;
      std::exception_ptr error;
      Slot& s = slots_[slot];
      try {
        s.labels.resize(batch_);
        if (raw) {
          s.bytes.resize(cap_);
          n = inner_->fill_raw(index, s.bytes.data(), s.labels.data());
        } else {
          s.floats.resize(cap_);
          n = inner_->fill(index, s.floats.data(), s.labels.data());
        }
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      busy_ = false;
      ready_ = index;
      ready_raw_ = raw;
      ready_slot_ = slot;
      ready_n_ = n;
      error_ = error;
      cv_.notify_all();
    }
  }

  std::unique_ptr<BatchSource> inner_;
  std::size_t cap_;  // values in one batch
  std::size_t batch_;
  Slot slots_[2];
  std::mutex m_;
  std::condition_variable cv_;
  // Batch to fill next and its slot; batch in a slot, ready to hand out; the slot handed out
  // last (−1: none, that batch was read into the caller's buffer).
  int want_ = -1, want_slot_ = 0, ready_ = -1, ready_slot_ = 0, ready_n_ = 0, handed_ = -1;
  bool want_raw_ = false, ready_raw_ = false, busy_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread worker_;  // last: started once everything above exists
};

}  // namespace

std::unique_ptr<BatchSource> prefetched(std::unique_ptr<BatchSource> inner, int batch) {
  return std::make_unique<Prefetcher>(std::move(inner), batch);
}

std::size_t prefetch_bytes(std::size_t sample_floats, int batch, bool raw) {
  return 2 * (sample_floats * static_cast<std::size_t>(batch) * (raw ? 1 : sizeof(float)) +
              static_cast<std::size_t>(batch));
}

}  // namespace zt::run
