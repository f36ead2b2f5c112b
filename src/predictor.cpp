// The default Predictor: the models in data/models/, compiled into the library.
#include <span>
#include <string_view>

#include "pipeweave/io.hpp"
#include "pipeweave/predictor.hpp"

namespace pipeweave {
namespace detail {
std::span<const std::string_view> embedded_models();  // generated from data/models/*.json at build time
}

namespace {
// Parsed once; every default-constructed Predictor shares the same immutable models.
const Predictor& bundled() {
  static const Predictor predictor = [] {
    std::vector<Mlp> models;
    for (std::string_view text : detail::embedded_models()) models.push_back(mlp_from_json(text));
    return Predictor(std::move(models));
  }();
  return predictor;
}
}  // namespace

Predictor::Predictor() : Predictor(bundled()) {}

}  // namespace pipeweave
