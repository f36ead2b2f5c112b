// The default Predictor: the models in data/models/, compiled into the library.
#include <exception>
#include <optional>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "json_support.hpp"
#include "pipeweave/io.hpp"
#include "pipeweave/predictor.hpp"

namespace pipeweave {
namespace detail {
std::span<const std::string_view> embedded_models();  // generated from data/models/*.json{,.gz} at build time
}

namespace {
// Parsed once; every default-constructed Predictor shares the same immutable models. Parsing the
// JSON is all of a process's first Predictor (0.1 s for 6 MB of text on one core): each model on a
// thread of its own, in the models' order; where a thread cannot start, the models are parsed here.
const Predictor& bundled() {
  static const Predictor predictor = [] {
    const std::span<const std::string_view> texts = detail::embedded_models();
    std::vector<std::optional<Mlp>> parsed(texts.size());
    std::vector<std::exception_ptr> failures(texts.size());
    const auto parse = [&](std::size_t index) {
      try {
        const std::string_view text = texts[index];
        // A model kept gzip-compressed (data/models/*.json.gz) is embedded as its bytes
        parsed[index] = detail::gzip_magic(text) ? mlp_from_json(detail::gunzip(text, "data/models", "bundled model")) : mlp_from_json(text);
      } catch (...) {
        failures[index] = std::current_exception();
      }
    };
    {
      std::vector<std::jthread> parsers;  // joined however this scope ends
      std::size_t index = 0;
      try {
        parsers.reserve(texts.size());
        for (; index + 1 < texts.size(); ++index) parsers.emplace_back(parse, index);
      } catch (const std::exception&) {  // no thread to be had: this one parses the rest
      }
      for (; index < texts.size(); ++index) parse(index);
    }
    std::vector<Mlp> models;
    for (std::size_t index = 0; index < texts.size(); ++index) {
      if (failures[index]) std::rethrow_exception(failures[index]);
      models.push_back(std::move(*parsed[index]));
    }
    return Predictor(std::move(models));
  }();
  return predictor;
}
}  // namespace

Predictor::Predictor() : Predictor(bundled()) {}

}  // namespace pipeweave
