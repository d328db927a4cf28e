#include "zotrain/train/int8_zo.hpp"

#include <array>

#include "zotrain/core/error.hpp"
#include "zotrain/train/int8_float.hpp"

namespace zt::train {
namespace {

class Int8ZoStep final : public ZoExecutor {
 public:
  Int8ZoStep(Int8Trainer& t, const std::uint8_t* labels, int n, int classes,
             std::uint64_t step_seed, const Int8Hyper& h, Int8Sign sign)
      : t_(t), labels_(labels), n_(n), classes_(classes), seed_(step_seed), h_(h), sign_(sign) {}

  void perturb(int query, int k) override { t_.perturb(seed_, query, k, h_); }
  void probe(int, ProbeSide side) override { t_.probe(side == ProbeSide::kPlus); }
  double estimate(int, int) override {  // a sign: the distance does not matter
    // All three are cheap ([batch, classes] work): the step uses sign_'s, the others are
    // computed to log how often the integer ones agree with the float one.
    const int gi = t_.integer_sign(labels_, false);
    const int ge = t_.integer_sign(labels_, true);
    const int gf = float_sign(t_.logits_plus(), t_.logits_minus(), labels_, n_, classes_);
    result_.sign_agree = gi == gf;
    result_.sign_agree_eq12 = ge == gf;
    result_.g = sign_ == Int8Sign::kInteger ? gi : sign_ == Int8Sign::kIntegerEq12 ? ge : gf;
    return result_.g;
  }
  void update(std::span<const double> g, int restore) override {
    ZT_CHECK(g.size() == 1);
    // The update kernel merges a restore of +1 · z; another restore is one more pass first.
    if (restore != 1) t_.perturb(seed_, 0, restore - 1, h_);
    t_.zo_update(seed_, 0, static_cast<int>(g[0]), h_);
  }
  const Int8StepResult& result() const { return result_; }

 private:
  Int8Trainer& t_;
  const std::uint8_t* labels_;
  int n_, classes_;
  std::uint64_t seed_;
  const Int8Hyper& h_;
  Int8Sign sign_;
  Int8StepResult result_;
};

}  // namespace

Int8StepResult int8_step(Int8Trainer& trainer, const ZoEstimator& estimator,
                         const std::int8_t* x, int exponent, int n, const std::uint8_t* labels,
                         int classes, std::uint64_t step_seed, const Int8Hyper& h,
                         Int8Sign sign) {
  ZT_CHECK_MSG(estimator.queries() == 1, "int8 training takes one query per step");
  trainer.begin(x, exponent, n);
  Int8StepResult r;
  if (trainer.zo_weights() > 0) {
    Int8ZoStep ex(trainer, labels, n, classes, step_seed, h, sign);
    std::array<double, 1> g{};
    estimator.step(ex, g);
    r = ex.result();
  } else {
    trainer.probe(false);
  }
  trainer.backprop(labels, step_seed, h);
  return r;
}

}  // namespace zt::train
