#pragma once
// Kernel: one value type for every op family. A Kernel is validated when it is made, so
// every Kernel that exists describes a launchable problem and predicting it cannot fail
// on its shape.

#include <type_traits>
#include <utility>
#include <variant>

#include "pipeweave/ops/attention.hpp"
#include "pipeweave/ops/collective.hpp"
#include "pipeweave/ops/elementwise.hpp"
#include "pipeweave/ops/fused_moe.hpp"
#include "pipeweave/ops/gemm.hpp"
#include "pipeweave/ops/rmsnorm.hpp"
#include "pipeweave/ops/silu_mul.hpp"

namespace pipeweave {

class Kernel {
 public:
  // Order matches OpFamily, so the variant index is the family.
  using Op = std::variant<Gemm, Attention, RmsNorm, SiluMul, FusedMoe, Elementwise, Collective>;

  // Implicit on purpose: `predictor.predict(Gemm{...}, gpu)` reads as it should.
  // Throws pipeweave::Error naming the field when the op is invalid.
  template <typename OpType, typename = std::enable_if_t<std::is_constructible_v<Op, OpType&&>>>
  Kernel(OpType&& op) : op_(std::forward<OpType>(op)) {  // NOLINT(google-explicit-constructor)
    std::visit([](const auto& held) { held.validate(); }, op_);
  }

  OpFamily family() const { return static_cast<OpFamily>(op_.index()); }
  const Op& op() const { return op_; }
  template <typename OpType>
  const OpType* get_if() const {
    return std::get_if<OpType>(&op_);
  }

  bool operator==(const Kernel&) const = default;

 private:
  Op op_;
};

static_assert(std::variant_size_v<Kernel::Op> == kOpFamilyCount);
static_assert(std::is_same_v<std::variant_alternative_t<static_cast<std::size_t>(OpFamily::collective), Kernel::Op>,
                             Collective>);

}  // namespace pipeweave
