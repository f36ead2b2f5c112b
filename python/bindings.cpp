// The Python module pipeweave._core: the library's API as Python objects, made with nanobind
// (python/README.md says why nanobind). Ops are immutable and validated when made, as in C++;
// data types, pipes and sources are their names as strings; pipeweave::InvalidInput is raised as
// pipeweave.InvalidInput (a pipeweave.Error and a ValueError), any other pipeweave::Error (a file
// that cannot be read, a training run that diverged) as pipeweave.Error (a RuntimeError), each
// carrying the library's message unchanged.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pipeweave/io.hpp"
#include "pipeweave/pipeweave.hpp"
#include "pipeweave/version.hpp"
#include "pipeweave/workload.hpp"

namespace nb = nanobind;
namespace pw = pipeweave;
using namespace nb::literals;

namespace {

// A dict from alternating keys and values: dict_of("m", 4096, "dtype", "bf16").
inline void fill(nb::dict&) {}
template <typename Value, typename... Rest>
void fill(nb::dict& d, const char* key, Value&& value, Rest&&... rest) {
  d[key] = nb::cast(std::forward<Value>(value));
  fill(d, std::forward<Rest>(rest)...);
}
template <typename... Items>
nb::dict dict_of(Items&&... items) {
  nb::dict d;
  fill(d, std::forward<Items>(items)...);
  return d;
}

pw::DType dtype_from(std::string_view text, std::string_view field = "dtype") {
  if (const auto dtype = pw::parse_dtype(text)) return *dtype;
  throw pw::InvalidInput(std::string(field) + " must be one of fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e5m2, int8, got " +
                  std::string(text));
}

pw::AttentionImpl attention_impl_from(std::string_view text) {
  if (text == "flash2") return pw::AttentionImpl::flash2;
  if (text == "flash3") return pw::AttentionImpl::flash3;
  throw pw::InvalidInput("attention.impl must be flash2 or flash3, got " + std::string(text));
}

pw::CollectiveKind collective_kind_from(std::string_view text) {
  for (pw::CollectiveKind kind : pw::kCollectiveKinds)
    if (text == pw::to_string(kind)) return kind;
  throw pw::InvalidInput("collective.kind must be one of all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, got " +
                  std::string(text));
}

// An op is checked the way a Kernel checks it, so that an object that exists is valid.
template <typename Op>
Op validated(Op op) {
  (void)pw::Kernel(op);
  return op;
}

std::string text_of(const pw::Kernel& kernel) { return pw::to_string(kernel); }

// The parsed or configured kernel as its op's Python object.
nb::object op_object(const pw::Kernel& kernel) {
  return std::visit([](const auto& op) { return nb::cast(op); }, kernel.op());
}

nb::object json_loads(const std::string& text) { return nb::module_::import_("json").attr("loads")(text); }
std::string json_dumps(const nb::handle& value) { return nb::cast<std::string>(nb::module_::import_("json").attr("dumps")(value)); }

nb::dict gemm_config_dict(const pw::GemmConfig& c) {
  nb::dict d;
  d["tile_m"] = c.tile_m, d["tile_n"] = c.tile_n, d["tile_k"] = c.tile_k, d["split_k"] = c.split_k;
  d["stages"] = c.stages, d["cluster_m"] = c.cluster_m, d["cluster_n"] = c.cluster_n, d["swap_ab"] = c.swap_ab;
  d["schedule"] = pw::to_string(c.schedule), d["raster"] = pw::to_string(c.raster);
  return d;
}

nb::dict prediction_dict(const pw::Prediction& p) {
  nb::dict d;
  d["latency_us"] = p.latency_us, d["efficiency"] = p.efficiency, d["lower_bound_us"] = p.lower_bound_us;
  d["tensor_us"] = p.tensor_us;
  d["bottleneck"] = pw::to_string(p.bottleneck), d["source"] = pw::to_string(p.source);
  d["protocol"] = pw::to_string(p.protocol);
  d["config_defaulted"] = p.config_defaulted, d["extrapolated"] = p.extrapolated;
  return d;
}

// A whole batch of one op family from numpy columns: one kernel per row, predicted as one list.
using Column = nb::ndarray<const std::int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

nb::ndarray<nb::numpy, double, nb::ndim<1>> latencies_array(const std::vector<pw::Prediction>& predictions) {
  auto* values = new double[predictions.size()];
  for (std::size_t i = 0; i < predictions.size(); ++i) values[i] = predictions[i].latency_us;
  nb::capsule owner(values, [](void* p) noexcept { delete[] static_cast<double*>(p); });
  return nb::ndarray<nb::numpy, double, nb::ndim<1>>(values, {predictions.size()}, owner);
}

std::size_t common_length(std::initializer_list<std::pair<const char*, const Column*>> columns) {
  std::size_t length = 0;
  bool first = true;
  for (const auto& [name, column] : columns) {
    if (first) length = column->shape(0), first = false;
    else if (column->shape(0) != length)
      throw pw::InvalidInput(std::string(name) + " has " + std::to_string(column->shape(0)) + " entries, the other columns " +
                      std::to_string(length));
  }
  return length;
}

// Each op's fields by name, the family first: what to_dict() gives.
nb::dict op_dict(const pw::Gemm& g) {
  nb::dict d = dict_of("family", "gemm", "m", g.m, "n", g.n, "k", g.k, "dtype", pw::to_string(g.dtype));
  d["config"] = g.config ? nb::object(gemm_config_dict(*g.config)) : nb::none();
  return d;
}
nb::dict op_dict(const pw::Attention& a) {
  nb::dict d = dict_of("family", "attention", "q_lens", a.q_lens, "kv_lens", a.kv_lens, "heads", a.heads,
             "kv_heads", a.kv_heads, "head_dim", a.head_dim, "causal", a.causal, "page_size", a.page_size,
             "dtype", pw::to_string(a.dtype));
  d["config"] = a.config ? nb::object(dict_of("impl", pw::to_string(a.config->impl), "tile_q", a.config->tile_q,
                                               "tile_kv", a.config->tile_kv, "num_splits", a.config->num_splits))
                         : nb::none();
  return d;
}
nb::dict op_dict(const pw::RmsNorm& r) {
  return dict_of("family", "rmsnorm", "tokens", r.tokens, "hidden", r.hidden, "dtype", pw::to_string(r.dtype),
                  "fused_residual", r.fused_residual);
}
nb::dict op_dict(const pw::SiluMul& s) {
  return dict_of("family", "silu_mul", "tokens", s.tokens, "dim", s.dim, "dtype", pw::to_string(s.dtype));
}
nb::dict op_dict(const pw::FusedMoe& f) {
  nb::dict d = dict_of("family", "fused_moe", "tokens", f.tokens, "experts", f.experts, "top_k", f.top_k, "hidden", f.hidden,
             "intermediate", f.intermediate, "dtype", pw::to_string(f.dtype), "zipf", f.zipf, "expert_parallel",
             f.expert_parallel);
  d["config"] = f.config ? nb::object(dict_of("block_m", f.config->block_m, "block_n", f.config->block_n,
                                               "block_k", f.config->block_k, "stages", f.config->stages, "group_m",
                                               f.config->group_m, "warps", f.config->warps))
                         : nb::none();
  return d;
}
nb::dict op_dict(const pw::Elementwise& e) {
  return dict_of("family", "elementwise", "bytes", e.bytes, "flops", e.flops, "xu_ops", e.xu_ops);
}
nb::dict op_dict(const pw::Collective& c) {
  return dict_of("family", "collective", "kind", pw::to_string(c.kind), "bytes", c.bytes, "ranks", c.ranks,
                  "dtype", pw::to_string(c.dtype));
}

// What every op class has: its kernel string (str, and repr as the call that makes it again),
// equality by value, its family and to_dict().
template <typename Op>
void add_common(nb::class_<Op>& cls) {
  cls.def("__str__", [](const Op& op) { return pw::to_string(pw::Kernel(op)); })
      .def("__repr__", [](const Op& op) { return "parse_kernel('" + pw::to_string(pw::Kernel(op)) + "')"; })
      .def("__eq__", [](const Op& a, const Op& b) { return a == b; })
      .def_prop_ro("family", [](const Op&) { return pw::to_string(Op::family); })
      .def("to_dict", [](const Op& op) { return op_dict(op); });
}

pw::Predictor make_predictor(const std::vector<std::filesystem::path>& model_files, bool bundled) {
  std::vector<pw::Mlp> models;
  models.reserve(model_files.size());
  for (const auto& path : model_files) models.push_back(pw::load_mlp(path));
  if (!bundled) return pw::Predictor(std::move(models));
  return models.empty() ? pw::Predictor() : pw::Predictor().with(std::move(models));
}

pw::ModelParams model_params_from(const nb::handle& config) {
  if (nb::isinstance<nb::dict>(config)) return pw::model_params_from_hf_config(json_dumps(config));
  return pw::load_hf_config(nb::cast<std::filesystem::path>(config));
}

std::vector<pw::TraceRequest> trace_from(const nb::handle& trace) {
  if (nb::isinstance<nb::str>(trace) || nb::hasattr(trace, "__fspath__"))
    return pw::load_trace(nb::cast<std::filesystem::path>(trace));
  // Rows of (prefill_tokens, decode_tokens[, output_tokens]), as the trace CSV's columns: written
  // as CSV text and read by the same reader, so the same checks and messages apply.
  std::string csv = "num_prefill_tokens,num_decode_tokens,output_tokens\n";
  for (nb::handle row : trace) {
    const auto fields = nb::cast<std::vector<std::int64_t>>(row);
    if (fields.size() != 2 && fields.size() != 3)
      throw pw::InvalidInput("trace rows must be (prefill_tokens, decode_tokens[, output_tokens]), got " +
                      std::to_string(fields.size()) + " values");
    const std::int64_t output = fields.size() == 3 ? fields[2] : fields[1] + 1;
    csv += std::to_string(fields[0]) + "," + std::to_string(fields[1]) + "," + std::to_string(output) + "\n";
  }
  return pw::trace_from_csv(csv, "trace");
}

// What Workload.generate and Predictor.predict_trace take to schedule a trace: the model, its
// requests, the deployment and the scheduler's policy.
struct TraceRun {
  pw::ModelParams params;
  std::vector<pw::TraceRequest> requests;
  pw::Deployment deployment;
  pw::SchedulerPolicy policy;
  TraceRun(nb::handle config, nb::handle trace, int tp, int pp, std::string_view dtype, std::int64_t max_batched_tokens,
           std::int64_t max_sequences, bool chunked_prefill, std::optional<std::string_view> attention_impl, bool expert_parallel)
      : params(model_params_from(config)),
        requests(trace_from(trace)),
        deployment{.tp = tp, .pp = pp, .dtype = dtype_from(dtype), .expert_parallel = expert_parallel},
        policy{.max_batched_tokens = max_batched_tokens, .max_sequences = max_sequences, .chunked_prefill = chunked_prefill} {
    if (attention_impl) deployment.attention_impl = attention_impl_from(*attention_impl);
  }
};

nb::dict workload_prediction_dict(const pw::WorkloadPrediction& p) {
  nb::dict d;
  d["total_us"] = p.total_us, d["prefill_us"] = p.prefill_us, d["overhead_us"] = p.overhead_us;
  d["extrapolated_us"] = p.extrapolated_us, d["served_us"] = p.served_us;
  d["median_decode_iteration_us"] = p.median_decode_iteration_us;
  d["time_to_first_token_us"] = dict_of("median", p.time_to_first_token_us.median, "p90", p.time_to_first_token_us.p90);
  d["time_per_output_token_us"] =
      dict_of("median", p.time_per_output_token_us.median, "p90", p.time_per_output_token_us.p90);
  d["engine"] = p.engine.name;
  // The sustained-load terms as `pipeweave e2e --json` names them.
  d["sustained_slowdown"] = p.sustained.tensor_bound_slowdown;
  d["sustained_utilization"] = p.sustained.at_tensor_utilization;
  d["served_label_slowdown"] = p.sustained.served_label_slowdown();
  nb::list iterations;
  for (const auto& it : p.iterations)
    iterations.append(dict_of("iteration", it.iteration, "phase", pw::to_string(it.phase), "num_tokens", it.num_tokens,
                               "kernels_us", it.kernels_us, "overhead_us", it.overhead_us, "launches", it.launches,
                               "extrapolated_us", it.extrapolated_us, "served_us", it.served_us));
  d["iterations"] = iterations;
  nb::list operators;
  for (const auto& op : p.operators) operators.append(dict_of("name", op.name, "us", op.us, "launches", op.launches));
  d["operators"] = operators;
  return d;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "pipeweave: predicts how long a GPU kernel, or a serving run, takes on a given NVIDIA GPU without running it.";
  m.attr("__version__") = pw::kVersion;
  // The later translator is tried first: InvalidInput before the Error it derives from.
  const nb::exception<pw::Error> error_type(m, "Error", PyExc_RuntimeError);
  nb::exception<pw::InvalidInput>(m, "InvalidInput", nb::make_tuple(error_type, nb::handle(PyExc_ValueError)));

  // ---- GPUs -----------------------------------------------------------------------------------
  nb::class_<pw::GpuSpec>(m, "GpuSpec", "What the demand model knows of one GPU. GpuSpec(name_or_path): a catalog or CUDA "
                                        "device name, or a spec JSON file.")
      .def("__init__", [](pw::GpuSpec* self, const std::string& name_or_path) { new (self) pw::GpuSpec(pw::resolve_gpu(name_or_path)); },
           "name_or_path"_a)
      .def_static("from_json", [](std::string_view text) { return pw::gpu_spec_from_json(text); }, "text"_a)
      .def_static("from_file", [](const std::filesystem::path& path) { return pw::load_gpu_spec(path); }, "path"_a)
      .def_static("from_dict", [](const nb::dict& spec) { return pw::gpu_spec_from_json(json_dumps(spec)); }, "spec"_a,
                  "A spec in the layout of the spec JSON files (GpuSpec.to_dict() gives one to start from).")
      .def("to_json", [](const pw::GpuSpec& gpu) { return pw::to_json(gpu); })
      .def("to_dict", [](const pw::GpuSpec& gpu) { return json_loads(pw::to_json(gpu)); })
      .def_ro("name", &pw::GpuSpec::name)
      .def_ro("aliases", &pw::GpuSpec::aliases)
      .def_ro("architecture", &pw::GpuSpec::architecture)
      .def_prop_ro("compute_capability",
                   [](const pw::GpuSpec& gpu) { return std::make_pair(gpu.compute_capability_major, gpu.compute_capability_minor); })
      .def_ro("sm_count", &pw::GpuSpec::sm_count)
      .def_ro("sm_clock_mhz", &pw::GpuSpec::sm_clock_mhz)
      .def_ro("max_clock_mhz", &pw::GpuSpec::max_clock_mhz)
      .def_ro("dram_bandwidth_gb_s", &pw::GpuSpec::dram_bandwidth_gb_s)
      .def_ro("l2_bandwidth_gb_s", &pw::GpuSpec::l2_bandwidth_gb_s)
      .def_ro("l2_bytes", &pw::GpuSpec::l2_bytes)
      .def_ro("memory_gb", &pw::GpuSpec::memory_gb)
      .def_ro("link_bandwidth_gb_s", &pw::GpuSpec::link_bandwidth_gb_s)
      .def_ro("power_limit_w", &pw::GpuSpec::power_limit_w)
      .def_ro("source", &pw::GpuSpec::source)
      .def_prop_ro("tensor_flops_per_dram_byte", &pw::GpuSpec::tensor_flops_per_dram_byte)
      .def("__eq__", [](const pw::GpuSpec& a, const pw::GpuSpec& b) { return a == b; })
      .def("__repr__", [](const pw::GpuSpec& gpu) { return "GpuSpec('" + gpu.name + "')"; });
  nb::implicitly_convertible<std::string, pw::GpuSpec>();
  m.def("catalog", [] { return std::vector<pw::GpuSpec>(pw::gpu_catalog().begin(), pw::gpu_catalog().end()); },
        "The built-in GPUs: calibrated specs where measured, data-sheet estimates elsewhere (each one's `source`).");
  m.def("default_gpu", [] { return pw::default_gpu(); });

  // ---- Ops ------------------------------------------------------------------------------------
  nb::class_<pw::GemmConfig>(m, "GemmConfig", "A GEMM's implementation config: tiles, split-K, stages, cluster, MMA side.")
      .def("__init__",
           [](pw::GemmConfig* self, int tile_m, int tile_n, int tile_k, int split_k, int stages, int cluster_m, int cluster_n,
              bool swap_ab, std::string_view schedule, std::string_view raster) {
             pw::GemmConfig config{.tile_m = tile_m, .tile_n = tile_n, .tile_k = tile_k, .split_k = split_k, .stages = stages,
                                   .cluster_m = cluster_m, .cluster_n = cluster_n, .swap_ab = swap_ab};
             const auto parsed_schedule = pw::parse_gemm_schedule(schedule);
             if (!parsed_schedule)
               throw pw::InvalidInput("gemm.schedule must be ping_pong, cooperative or cooperative_split_n, got " + std::string(schedule));
             const auto parsed_raster = pw::parse_gemm_raster(raster);
             if (!parsed_raster) throw pw::InvalidInput("gemm.raster must be m or n, got " + std::string(raster));
             config.schedule = *parsed_schedule, config.raster = *parsed_raster;
             config.validate();
             new (self) pw::GemmConfig(config);
           },
           "tile_m"_a, "tile_n"_a, "tile_k"_a, "split_k"_a = 1, "stages"_a = 0, "cluster_m"_a = 1, "cluster_n"_a = 1,
           "swap_ab"_a = false, "schedule"_a = "ping_pong", "raster"_a = "n")
      .def_ro("tile_m", &pw::GemmConfig::tile_m)
      .def_ro("tile_n", &pw::GemmConfig::tile_n)
      .def_ro("tile_k", &pw::GemmConfig::tile_k)
      .def_ro("split_k", &pw::GemmConfig::split_k)
      .def_ro("stages", &pw::GemmConfig::stages)
      .def_ro("cluster_m", &pw::GemmConfig::cluster_m)
      .def_ro("cluster_n", &pw::GemmConfig::cluster_n)
      .def_ro("swap_ab", &pw::GemmConfig::swap_ab)
      .def_prop_ro("schedule", [](const pw::GemmConfig& c) { return pw::to_string(c.schedule); })
      .def_prop_ro("raster", [](const pw::GemmConfig& c) { return pw::to_string(c.raster); })
      .def("to_dict", &gemm_config_dict)
      .def("__eq__", [](const pw::GemmConfig& a, const pw::GemmConfig& b) { return a == b; })
      .def("__repr__", [](const pw::GemmConfig& c) {
        std::string text = "GemmConfig(";
        bool first = true;
        for (auto [key, value] : gemm_config_dict(c)) {
          text += (first ? "" : ", ") + nb::cast<std::string>(nb::str(key)) + "=" + nb::cast<std::string>(nb::repr(value));
          first = false;
        }
        return text + ")";
      });

  nb::class_<pw::Gemm> gemm_cls(m, "Gemm", "C[m, n] = A[m, k] B[k, n]; config None: the predictor chooses it, as a GEMM library would.");
  gemm_cls.def("__init__",
           [](pw::Gemm* self, std::int64_t m_, std::int64_t n, std::int64_t k, std::string_view dtype,
              std::optional<pw::GemmConfig> config) {
             new (self) pw::Gemm(validated(pw::Gemm{.m = m_, .n = n, .k = k, .dtype = dtype_from(dtype, "gemm.dtype"), .config = config}));
           },
           "m"_a, "n"_a, "k"_a, "dtype"_a = "bf16", "config"_a = nb::none())
      .def_ro("m", &pw::Gemm::m)
      .def_ro("n", &pw::Gemm::n)
      .def_ro("k", &pw::Gemm::k)
      .def_prop_ro("dtype", [](const pw::Gemm& g) { return pw::to_string(g.dtype); })
      .def_ro("config", &pw::Gemm::config);

  nb::class_<pw::AttentionConfig>(m, "AttentionConfig", "The attention implementation (flash2 or flash3) and, optionally, its tiles.")
      .def("__init__",
           [](pw::AttentionConfig* self, std::string_view impl, int tile_q, int tile_kv, int num_splits) {
             pw::AttentionConfig config{.impl = attention_impl_from(impl), .tile_q = tile_q, .tile_kv = tile_kv, .num_splits = num_splits};
             config.validate();
             new (self) pw::AttentionConfig(config);
           },
           "impl"_a = "flash3", "tile_q"_a = 0, "tile_kv"_a = 0, "num_splits"_a = 0)
      .def_prop_ro("impl", [](const pw::AttentionConfig& c) { return pw::to_string(c.impl); })
      .def_ro("tile_q", &pw::AttentionConfig::tile_q)
      .def_ro("tile_kv", &pw::AttentionConfig::tile_kv)
      .def_ro("num_splits", &pw::AttentionConfig::num_splits);

  nb::class_<pw::Attention> attention_cls(m, "Attention",
                            "Attention over a ragged batch: per sequence its new query tokens (q_lens) and the KV length "
                            "it attends to, the new tokens included (kv_lens, default q_lens: a prefill).");
  attention_cls.def("__init__",
           [](pw::Attention* self, std::vector<std::int64_t> q_lens, std::optional<std::vector<std::int64_t>> kv_lens,
              std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim, bool causal, std::int64_t page_size,
              std::string_view dtype, std::optional<pw::AttentionConfig> config) {
             pw::Attention attention;
             attention.kv_lens = kv_lens ? std::move(*kv_lens) : q_lens;
             attention.q_lens = std::move(q_lens);
             attention.heads = heads, attention.kv_heads = kv_heads, attention.head_dim = head_dim, attention.causal = causal;
             attention.page_size = page_size, attention.dtype = dtype_from(dtype, "attention.dtype"), attention.config = config;
             new (self) pw::Attention(validated(std::move(attention)));
           },
           "q_lens"_a, "kv_lens"_a = nb::none(), nb::kw_only(), "heads"_a, "kv_heads"_a, "head_dim"_a, "causal"_a = true,
           "page_size"_a = 0, "dtype"_a = "bf16", "config"_a = nb::none())
      .def_static("prefill",
                  [](std::int64_t batch, std::int64_t seq_len, std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim,
                     std::string_view dtype) {
                    if (batch <= 0) throw pw::InvalidInput("attention.batch must be positive, got " + std::to_string(batch));
                    return validated(pw::Attention::prefill(batch, seq_len, heads, kv_heads, head_dim, dtype_from(dtype)));
                  },
                  "batch"_a, "seq_len"_a, "heads"_a, "kv_heads"_a, "head_dim"_a, "dtype"_a = "bf16")
      .def_static("decode",
                  [](std::int64_t batch, std::int64_t kv_len, std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim,
                     std::string_view dtype) {
                    if (batch <= 0) throw pw::InvalidInput("attention.batch must be positive, got " + std::to_string(batch));
                    return validated(pw::Attention::decode(batch, kv_len, heads, kv_heads, head_dim, dtype_from(dtype)));
                  },
                  "batch"_a, "kv_len"_a, "heads"_a, "kv_heads"_a, "head_dim"_a, "dtype"_a = "bf16")
      .def_ro("q_lens", &pw::Attention::q_lens)
      .def_ro("kv_lens", &pw::Attention::kv_lens)
      .def_ro("heads", &pw::Attention::heads)
      .def_ro("kv_heads", &pw::Attention::kv_heads)
      .def_ro("head_dim", &pw::Attention::head_dim)
      .def_ro("causal", &pw::Attention::causal)
      .def_ro("page_size", &pw::Attention::page_size)
      .def_prop_ro("dtype", [](const pw::Attention& a) { return pw::to_string(a.dtype); })
      .def_ro("config", &pw::Attention::config);

  nb::class_<pw::RmsNorm> rmsnorm_cls(m, "RmsNorm", "RMSNorm of tokens rows of hidden, optionally with the residual add fused in.");
  rmsnorm_cls.def("__init__",
           [](pw::RmsNorm* self, std::int64_t tokens, std::int64_t hidden, std::string_view dtype, bool fused_residual) {
             new (self) pw::RmsNorm(validated(
                 pw::RmsNorm{.tokens = tokens, .hidden = hidden, .dtype = dtype_from(dtype, "rmsnorm.dtype"), .fused_residual = fused_residual}));
           },
           "tokens"_a, "hidden"_a, "dtype"_a = "bf16", "fused_residual"_a = false)
      .def_ro("tokens", &pw::RmsNorm::tokens)
      .def_ro("hidden", &pw::RmsNorm::hidden)
      .def_prop_ro("dtype", [](const pw::RmsNorm& r) { return pw::to_string(r.dtype); })
      .def_ro("fused_residual", &pw::RmsNorm::fused_residual);

  nb::class_<pw::SiluMul> silu_cls(m, "SiluMul", "SiLU(gate) * up over tokens rows; dim is the output width (the input is twice as wide).");
  silu_cls.def("__init__",
           [](pw::SiluMul* self, std::int64_t tokens, std::int64_t dim, std::string_view dtype) {
             new (self) pw::SiluMul(validated(pw::SiluMul{.tokens = tokens, .dim = dim, .dtype = dtype_from(dtype, "silu_mul.dtype")}));
           },
           "tokens"_a, "dim"_a, "dtype"_a = "bf16")
      .def_ro("tokens", &pw::SiluMul::tokens)
      .def_ro("dim", &pw::SiluMul::dim)
      .def_prop_ro("dtype", [](const pw::SiluMul& s) { return pw::to_string(s.dtype); });

  nb::class_<pw::FusedMoeConfig>(m, "FusedMoeConfig", "The fused-MoE kernel's block sizes and pipeline stages.")
      .def("__init__",
           [](pw::FusedMoeConfig* self, int block_m, int block_n, int block_k, int stages, int group_m, int warps) {
             pw::FusedMoeConfig config{.block_m = block_m, .block_n = block_n, .block_k = block_k, .stages = stages,
                                       .group_m = group_m, .warps = warps};
             config.validate();
             new (self) pw::FusedMoeConfig(config);
           },
           "block_m"_a, "block_n"_a, "block_k"_a, "stages"_a = 3, "group_m"_a = 1, "warps"_a = 4)
      .def_ro("block_m", &pw::FusedMoeConfig::block_m)
      .def_ro("block_n", &pw::FusedMoeConfig::block_n)
      .def_ro("block_k", &pw::FusedMoeConfig::block_k)
      .def_ro("stages", &pw::FusedMoeConfig::stages)
      .def_ro("group_m", &pw::FusedMoeConfig::group_m)
      .def_ro("warps", &pw::FusedMoeConfig::warps)
      .def("__eq__", [](const pw::FusedMoeConfig& a, const pw::FusedMoeConfig& b) { return a == b; })
      .def("__repr__", [](const pw::FusedMoeConfig& c) {
        return "FusedMoeConfig(block_m=" + std::to_string(c.block_m) + ", block_n=" + std::to_string(c.block_n) +
               ", block_k=" + std::to_string(c.block_k) + ", stages=" + std::to_string(c.stages) +
               ", group_m=" + std::to_string(c.group_m) + ", warps=" + std::to_string(c.warps) + ")";
      });

  nb::class_<pw::FusedMoe> moe_cls(m, "FusedMoe", "A mixture-of-experts layer's grouped expert GEMMs (intermediate: per expert, after TP).");
  moe_cls.def("__init__",
           [](pw::FusedMoe* self, std::int64_t tokens, std::int64_t experts, std::int64_t top_k, std::int64_t hidden,
              std::int64_t intermediate, std::string_view dtype, std::optional<pw::FusedMoeConfig> config, double zipf,
              std::int64_t expert_parallel) {
             new (self) pw::FusedMoe(validated(pw::FusedMoe{.tokens = tokens, .experts = experts, .top_k = top_k, .hidden = hidden,
                                                            .intermediate = intermediate, .dtype = dtype_from(dtype, "fused_moe.dtype"),
                                                            .zipf = zipf, .expert_parallel = expert_parallel, .config = config}));
           },
           "tokens"_a, "experts"_a, "top_k"_a, "hidden"_a, "intermediate"_a, "dtype"_a = "bf16", "config"_a = nb::none(),
           "zipf"_a = 0.0, "expert_parallel"_a = 1,
           "zipf: the routing's skew, expert i picked in proportion to 1 / (i + 1)^zipf (0: uniform); expert_parallel: the "
           "ranks the experts are split over (this kernel is one rank's, over every token; experts: the model's)")
      .def_ro("tokens", &pw::FusedMoe::tokens)
      .def_ro("experts", &pw::FusedMoe::experts)
      .def_ro("top_k", &pw::FusedMoe::top_k)
      .def_ro("hidden", &pw::FusedMoe::hidden)
      .def_ro("intermediate", &pw::FusedMoe::intermediate)
      .def_prop_ro("dtype", [](const pw::FusedMoe& f) { return pw::to_string(f.dtype); })
      .def_ro("zipf", &pw::FusedMoe::zipf)
      .def_ro("expert_parallel", &pw::FusedMoe::expert_parallel)
      .def_ro("config", &pw::FusedMoe::config);

  nb::class_<pw::Elementwise> elementwise_cls(m, "Elementwise", "A memory-bound kernel described by its DRAM bytes, FP32 operations and special-function operations.");
  elementwise_cls.def("__init__",
           [](pw::Elementwise* self, double bytes, double flops, double xu_ops) {
             new (self) pw::Elementwise(validated(pw::Elementwise{.bytes = bytes, .flops = flops, .xu_ops = xu_ops}));
           },
           "bytes"_a, "flops"_a = 0.0, "xu_ops"_a = 0.0)
      .def_ro("bytes", &pw::Elementwise::bytes)
      .def_ro("flops", &pw::Elementwise::flops)
      .def_ro("xu_ops", &pw::Elementwise::xu_ops);

  nb::class_<pw::Collective> collective_cls(m, "Collective", "A collective among ranks GPUs; bytes: each rank's buffer.");
  collective_cls.def("__init__",
           [](pw::Collective* self, std::string_view kind, double bytes, int ranks, std::string_view dtype) {
             new (self) pw::Collective(validated(
                 pw::Collective{.kind = collective_kind_from(kind), .bytes = bytes, .ranks = ranks, .dtype = dtype_from(dtype, "collective.dtype")}));
           },
           "kind"_a, "bytes"_a, "ranks"_a, "dtype"_a = "bf16")
      .def_prop_ro("kind", [](const pw::Collective& c) { return pw::to_string(c.kind); })
      .def_ro("bytes", &pw::Collective::bytes)
      .def_ro("ranks", &pw::Collective::ranks)
      .def_prop_ro("dtype", [](const pw::Collective& c) { return pw::to_string(c.dtype); });

  // Every op as a Kernel, the type the predictor takes: an op object converts to one implicitly.
  nb::class_<pw::Kernel> kernel(m, "Kernel", "Any op; predictor methods take op objects (Gemm, Attention, ...) directly.");
  kernel.def(nb::init_implicit<pw::Gemm>())
      .def(nb::init_implicit<pw::Attention>())
      .def(nb::init_implicit<pw::RmsNorm>())
      .def(nb::init_implicit<pw::SiluMul>())
      .def(nb::init_implicit<pw::FusedMoe>())
      .def(nb::init_implicit<pw::Elementwise>())
      .def(nb::init_implicit<pw::Collective>())
      .def_prop_ro("family", [](const pw::Kernel& k) { return pw::to_string(k.family()); })
      .def_prop_ro("op", &op_object)
      .def("__str__", &text_of)
      .def("__eq__", [](const pw::Kernel& a, const pw::Kernel& b) { return a == b; });
  // The ops print as the kernel strings parse_kernel reads, and compare by value.
  add_common(gemm_cls);
  add_common(attention_cls);
  add_common(rmsnorm_cls);
  add_common(silu_cls);
  add_common(moe_cls);
  add_common(elementwise_cls);
  add_common(collective_cls);
  m.def("default_gemm_config", [](const pw::Gemm& gemm, const pw::GpuSpec& gpu) { return pw::default_config(gemm, gpu); }, "gemm"_a,
        "gpu"_a, "The analytical default config of a GEMM on a GPU (what a prediction without a GEMM model assumes).");
  m.def("gemm_candidates", [](const pw::Gemm& gemm, const pw::GpuSpec& gpu) { return pw::gemm_candidates(gemm, gpu); }, "gemm"_a,
        "gpu"_a, "The configs a GEMM library would consider for this GEMM on this GPU (what full_search_gemm_config ranks; best_gemm_config picks from them).");
  m.def("fused_moe_candidates", [](const pw::FusedMoe& moe, const pw::GpuSpec& gpu) { return pw::fused_moe_candidates(moe, gpu); },
        "moe"_a, "gpu"_a, "The configs vLLM's tuning script searches that fit this GPU's shared memory: what an autotuner ranks.");
  m.def("default_fused_moe_config", [](const pw::FusedMoe& moe, const pw::GpuSpec& gpu) { return pw::default_config(moe, gpu); },
        "moe"_a, "gpu"_a, "vLLM's default fused-MoE config when no tuned table exists (get_default_config).");
  m.def("parse_kernel", [](std::string_view text) { return op_object(pw::parse_kernel(text)); }, "text"_a,
        "An op from its kernel string, e.g. 'gemm:m=4096,n=4096,k=4096,dtype=bf16'.");

  // ---- Predictions ----------------------------------------------------------------------------
  nb::class_<pw::Prediction>(m, "Prediction", "latency_us = lower_bound_us / efficiency; bottleneck: the busiest pipe.")
      .def_ro("latency_us", &pw::Prediction::latency_us)
      .def_ro("efficiency", &pw::Prediction::efficiency)
      .def_ro("lower_bound_us", &pw::Prediction::lower_bound_us)
      .def_ro("tensor_us", &pw::Prediction::tensor_us, "the tensor pipe's work over the GPU at the spec's rate")
      .def_prop_ro("bottleneck", [](const pw::Prediction& p) { return pw::to_string(p.bottleneck); })
      .def_prop_ro("source", [](const pw::Prediction& p) { return pw::to_string(p.source); })
      .def_prop_ro("protocol", [](const pw::Prediction& p) { return pw::to_string(p.protocol); },
                   "how the answering network's rows were timed: rested (alone, after a rest) or served (back to back)")
      .def_ro("config_defaulted", &pw::Prediction::config_defaulted)
      .def_ro("extrapolated", &pw::Prediction::extrapolated)
      .def("to_dict", &prediction_dict)
      .def("__repr__", [](const pw::Prediction& p) { return "Prediction(" + nb::cast<std::string>(nb::repr(prediction_dict(p))) + ")"; });

  nb::class_<pw::RankedCandidate>(m, "RankedCandidate", "One candidate of Predictor.rank: its place in the list given, and its prediction.")
      .def_ro("index", &pw::RankedCandidate::index)
      .def_ro("prediction", &pw::RankedCandidate::prediction)
      .def("to_dict", [](const pw::RankedCandidate& c) { return dict_of("index", c.index, "prediction", prediction_dict(c.prediction)); })
      .def("__repr__", [](const pw::RankedCandidate& c) {
        return "RankedCandidate(index=" + std::to_string(c.index) + ", latency_us=" + std::to_string(c.prediction.latency_us) + ")";
      });

  // ---- Workloads ------------------------------------------------------------------------------
  nb::class_<pw::Workload>(m, "Workload", "A serving run as iterations of kernels, in the published workload layout.")
      .def_static("from_file", [](const std::filesystem::path& path) { return pw::load_workload(path); }, "path"_a)
      .def_static("from_json", [](std::string_view text) { return pw::workload_from_json(text); }, "text"_a)
      .def_static("from_dict", [](const nb::dict& workload) { return pw::workload_from_json(json_dumps(workload)); }, "workload"_a)
      .def_static(
          "generate",
          [](nb::handle config, nb::handle trace, int tp, int pp, std::string_view dtype, std::int64_t max_batched_tokens,
             std::int64_t max_sequences, bool chunked_prefill, std::optional<std::string_view> attention_impl, std::string model,
             bool expert_parallel) {
            const TraceRun run(config, trace, tp, pp, dtype, max_batched_tokens, max_sequences, chunked_prefill, attention_impl,
                               expert_parallel);
            nb::gil_scoped_release unlocked;
            return pw::generate_workload(std::move(model), run.params, run.requests, run.deployment, run.policy);
          },
          "config"_a, "trace"_a, nb::kw_only(), "tp"_a = 1, "pp"_a = 1, "dtype"_a = "bf16", "max_batched_tokens"_a = 8192,
          "max_sequences"_a = 256, "chunked_prefill"_a = true, "attention_impl"_a = nb::none(), "model"_a = "model",
          "expert_parallel"_a = false,
          "The iterations a trace runs as under continuous batching. config: a Hugging Face config.json path or dict; "
          "trace: a trace CSV path or rows of (prefill_tokens, decode_tokens[, output_tokens]); expert_parallel: a mixture "
          "of experts' layers expert-parallel over the tp ranks (vLLM's --enable-expert-parallel).")
      .def("to_json", [](const pw::Workload& w) { return pw::to_json(w); })
      .def("to_dict", [](const pw::Workload& w) { return json_loads(pw::to_json(w)); })
      .def_ro("model", &pw::Workload::model)
      .def_ro("tp_size", &pw::Workload::tp_size)
      .def_ro("pp_size", &pw::Workload::pp_size)
      .def_prop_ro("dtype", [](const pw::Workload& w) { return pw::to_string(w.dtype); })
      .def("__len__", [](const pw::Workload& w) { return w.iterations.size(); });

  nb::class_<pw::WorkloadPrediction>(m, "WorkloadPrediction", "A serving run's predicted times, in microseconds.")
      .def_ro("total_us", &pw::WorkloadPrediction::total_us)
      .def_ro("prefill_us", &pw::WorkloadPrediction::prefill_us)
      .def_ro("overhead_us", &pw::WorkloadPrediction::overhead_us)
      .def_ro("extrapolated_us", &pw::WorkloadPrediction::extrapolated_us)
      .def_ro("served_us", &pw::WorkloadPrediction::served_us)
      .def_ro("median_decode_iteration_us", &pw::WorkloadPrediction::median_decode_iteration_us)
      .def_prop_ro("time_to_first_token_us", [](const pw::WorkloadPrediction& p) {
        return dict_of("median", p.time_to_first_token_us.median, "p90", p.time_to_first_token_us.p90);
      })
      .def_prop_ro("time_per_output_token_us", [](const pw::WorkloadPrediction& p) {
        return dict_of("median", p.time_per_output_token_us.median, "p90", p.time_per_output_token_us.p90);
      })
      .def_prop_ro("engine", [](const pw::WorkloadPrediction& p) { return p.engine.name; })
      .def_prop_ro("sustained_slowdown", [](const pw::WorkloadPrediction& p) { return p.sustained.tensor_bound_slowdown; },
                   "The slowdown of tensor-bound kernels at full tensor utilisation under sustained load.")
      .def_prop_ro("served_label_slowdown", [](const pw::WorkloadPrediction& p) { return p.sustained.served_label_slowdown(); },
                   "The part of it that kernels answered from served rows already hold.")
      .def("to_dict", &workload_prediction_dict)
      .def("__repr__", [](const pw::WorkloadPrediction& p) {
        return "WorkloadPrediction(total_us=" + std::to_string(p.total_us) + ", iterations=" + std::to_string(p.iterations.size()) + ")";
      });

  // ---- The predictor --------------------------------------------------------------------------
  nb::class_<pw::Predictor>(m, "Predictor",
                            "Predictor(): the bundled models. Predictor(models=[...]): model files over the bundled ones "
                            "(bundled=False: those alone). Thread-safe; list, numpy, rank and workload calls release the GIL.")
      .def("__init__",
           [](pw::Predictor* self, const std::vector<std::filesystem::path>& models, bool bundled) {
             new (self) pw::Predictor(make_predictor(models, bundled));
           },
           "models"_a = std::vector<std::filesystem::path>{}, "bundled"_a = true)
      .def_static("analytical", &pw::Predictor::analytical, "No models: every prediction is the analytical lower bound.")
      .def("predict", [](const pw::Predictor& p, const pw::Kernel& kernel, const pw::GpuSpec& gpu) { return p.predict(kernel, gpu); },
           "kernel"_a, "gpu"_a, "One kernel on one GPU (a GpuSpec, or its name: a GpuSpec made once is faster).")
      .def(
          "predict",
          [](const pw::Predictor& p, const std::vector<pw::Kernel>& kernels, const pw::GpuSpec& gpu) {
            nb::gil_scoped_release unlocked;
            return p.predict(std::span<const pw::Kernel>(kernels), gpu);
          },
          "kernels"_a, "gpu"_a, "Many kernels on one GPU, one network pass per network for the whole list.")
      .def(
          "predict_gemms",
          [](const pw::Predictor& p, const Column& m_, const Column& n, const Column& k, const pw::GpuSpec& gpu, std::string_view dtype) {
            const std::size_t count = common_length({{"m", &m_}, {"n", &n}, {"k", &k}});
            const pw::DType type = dtype_from(dtype);
            std::vector<pw::Kernel> kernels;
            kernels.reserve(count);
            for (std::size_t i = 0; i < count; ++i) kernels.emplace_back(pw::Gemm{.m = m_(i), .n = n(i), .k = k(i), .dtype = type});
            std::vector<pw::Prediction> predictions;
            {
              nb::gil_scoped_release unlocked;
              predictions = p.predict(std::span<const pw::Kernel>(kernels), gpu);
            }
            return latencies_array(predictions);
          },
          "m"_a, "n"_a, "k"_a, "gpu"_a, "dtype"_a = "bf16",
          "GEMMs without configs from int64 numpy arrays of m, n and k: their latencies in microseconds, as a numpy array.")
      .def(
          "predict_rows",
          [](const pw::Predictor& p, std::string_view family, const Column& tokens, const Column& width, const pw::GpuSpec& gpu,
             std::string_view dtype) {
            const std::size_t count = common_length({{"tokens", &tokens}, {"width", &width}});
            const pw::DType type = dtype_from(dtype);
            std::vector<pw::Kernel> kernels;
            kernels.reserve(count);
            if (family == "rmsnorm")
              for (std::size_t i = 0; i < count; ++i)
                kernels.emplace_back(pw::RmsNorm{.tokens = tokens(i), .hidden = width(i), .dtype = type, .fused_residual = true});
            else if (family == "silu_mul")
              for (std::size_t i = 0; i < count; ++i) kernels.emplace_back(pw::SiluMul{.tokens = tokens(i), .dim = width(i), .dtype = type});
            else
              throw pw::InvalidInput("family must be rmsnorm or silu_mul, got " + std::string(family));
            std::vector<pw::Prediction> predictions;
            {
              nb::gil_scoped_release unlocked;
              predictions = p.predict(std::span<const pw::Kernel>(kernels), gpu);
            }
            return latencies_array(predictions);
          },
          "family"_a, "tokens"_a, "width"_a, "gpu"_a, "dtype"_a = "bf16",
          "Row-wise kernels from int64 numpy arrays: rmsnorm (fused residual add; width = hidden) or silu_mul (width = "
          "output dim). Their latencies in microseconds, as a numpy array.")
      .def(
          "rank",
          [](const pw::Predictor& p, const std::vector<pw::Kernel>& candidates, const pw::GpuSpec& gpu) {
            nb::gil_scoped_release unlocked;
            return p.rank(std::span<const pw::Kernel>(candidates), gpu);
          },
          "candidates"_a, "gpu"_a, "The candidates ordered by predicted latency, fastest first: the autotuner's question.")
      .def("best_gemm_config", &pw::Predictor::best_gemm_config, "gemm"_a, "gpu"_a,
           "The config this predictor expects to run fastest for a GEMM given only its shape (remembered; at m off "
           "its grid of every 16, the best of the shortlists of the grid points either side).")
      .def("full_search_gemm_config", &pw::Predictor::full_search_gemm_config, "gemm"_a, "gpu"_a,
           "The best predicted of every gemm_candidates() entry, not remembered: best_gemm_config() at its grid of m.")
      .def("configured", [](const pw::Predictor& p, const pw::Kernel& kernel, const pw::GpuSpec& gpu) { return op_object(p.configured(kernel, gpu)); },
           "kernel"_a, "gpu"_a, "The kernel as predict() runs it: a GEMM without a config gets best_gemm_config() (or, where its config-less model reads another pick, the config its tree expects cuBLAS to run or the analytical default config).")
      .def(
          "predict_workload",
          [](const pw::Predictor& p, nb::handle workload, const pw::GpuSpec& gpu, std::string_view engine) {
            pw::Workload loaded;
            const pw::Workload* source = nullptr;
            if (nb::isinstance<pw::Workload>(workload)) source = &nb::cast<const pw::Workload&>(workload);
            else if (nb::isinstance<nb::dict>(workload)) loaded = pw::workload_from_json(json_dumps(workload)), source = &loaded;
            else loaded = pw::load_workload(nb::cast<std::filesystem::path>(workload)), source = &loaded;
            pw::WorkloadOptions options;
            options.engine = pw::EngineProfile::named(engine);
            nb::gil_scoped_release unlocked;
            return pw::predict_workload(p, *source, gpu, options);
          },
          "workload"_a, "gpu"_a, "engine"_a = "sglang",
          "A serving run end to end: a Workload, a workload JSON path or dict; engine: sglang, vllm or none.")
      .def(
          "predict_trace",
          [](const pw::Predictor& p, nb::handle config, nb::handle trace, const pw::GpuSpec& gpu, int tp, int pp, std::string_view dtype,
             std::int64_t max_batched_tokens, std::int64_t max_sequences, bool chunked_prefill,
             std::optional<std::string_view> attention_impl, std::string model, std::string_view engine, int threads,
             bool expert_parallel) {
            const TraceRun run(config, trace, tp, pp, dtype, max_batched_tokens, max_sequences, chunked_prefill, attention_impl,
                               expert_parallel);
            pw::WorkloadOptions options;
            options.engine = pw::EngineProfile::named(engine);
            options.threads = threads;
            nb::gil_scoped_release unlocked;
            return pw::predict_trace(p, std::move(model), run.params, run.requests, run.deployment, run.policy, gpu, options);
          },
          "config"_a, "trace"_a, "gpu"_a, nb::kw_only(), "tp"_a = 1, "pp"_a = 1, "dtype"_a = "bf16", "max_batched_tokens"_a = 8192,
          "max_sequences"_a = 256, "chunked_prefill"_a = true, "attention_impl"_a = nb::none(), "model"_a = "model",
          "engine"_a = "sglang", "threads"_a = 1, "expert_parallel"_a = false,
          "A trace's serving run predicted as it is scheduled: predict_workload(Workload.generate(config, trace, ...), gpu, "
          "engine) to the last bit, without holding the whole workload. threads: how many predict (0: one per core; with "
          "more than one, the next block of iterations is scheduled beside them).");

  m.def("dtypes", [] {
    std::vector<std::string> names;
    for (pw::DType dtype : pw::kAllDTypes) names.emplace_back(pw::to_string(dtype));
    return names;
  });
}
