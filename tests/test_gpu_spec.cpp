// The GPU catalog (names, lookup, spec-sheet sanity) and GpuSpec as JSON (round trip,
// files, and every way a spec file is refused).
#include <catch2/catch.hpp>
#include <zlib.h>

#include "test_support.hpp"
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "pipeweave/error.hpp"
#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/io.hpp"

using namespace pipeweave;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

const std::vector<std::string> kCanonicalNames = {
    "A100-SXM4-80GB", "A40",  "H100-SXM", "H100-PCIe", "H20",          "H200-SXM",  "H800",
    "L20",            "L40",  "L40S",     "L4",        "RTX-6000-Ada", "RTX-A6000", "RTX-PRO-6000-Blackwell-Server",
    "B200",           "A10",  "RTX-4090"};

using pipeweave_test::error_of;

// Dense fp16/bf16 tensor throughput of the whole chip, in TFLOPS.
double dense_bf16_tflops(const GpuSpec& gpu) {
  return gpu.tensor_flops_per_clk_per_sm.fp16_bf16 * gpu.sm_count * gpu.sm_clock_mhz * 1e6 / 1e12;
}

// A spec that is valid but shares no figure with the catalog, with values whose decimal
// forms need every digit to survive a round trip.
GpuSpec custom_spec() {
  GpuSpec gpu;
  gpu.name = "Test-GPU";
  gpu.aliases = {"NVIDIA Test GPU", "testgpu"};
  gpu.architecture = "hopper";
  gpu.compute_capability_major = 9;
  gpu.compute_capability_minor = 0;
  gpu.sm_count = 77;
  gpu.sm_clock_mhz = 1234.5678901234567;
  gpu.tensor_flops_per_clk_per_sm.fp16_bf16 = 4096;
  gpu.tensor_flops_per_clk_per_sm.fp8 = 0;
  gpu.tensor_flops_per_clk_per_sm.tf32 = 2048.25;
  gpu.tensor_flops_per_clk_per_sm.int8 = 8192;
  gpu.fp32_lanes_per_clk_per_sm = 128;
  gpu.xu_ops_per_clk_per_sm = 16;
  gpu.smem_bytes_per_clk_per_sm = 128;
  gpu.dram_bandwidth_gb_s = 1.0 / 3.0 * 10000;
  gpu.l2_bandwidth_gb_s = 6543.21;
  gpu.l2_bytes = 50 * 1024.0 * 1024.0;
  gpu.smem_bytes_per_sm = 233472;
  gpu.registers_per_sm = 65536;
  gpu.max_threads_per_sm = 2048;
  gpu.max_ctas_per_sm = 32;
  gpu.memory_gb = 0.1;
  gpu.link_bandwidth_gb_s = 450;
  gpu.link_latency_us = 0;
  gpu.source = "made up in test_gpu_spec.cpp";
  return gpu;
}

json valid_document() { return json::parse(to_json(custom_spec())); }

std::string spec_error(const json& document) {
  return error_of([&] { (void)gpu_spec_from_json(document.dump()); });
}

// Every field a spec file must carry. Numbers by where they live in the document.
const std::vector<std::string> kTextFields = {"format", "name", "architecture", "source"};
const std::vector<std::string> kTopNumberFields = {
    "version",
    "compute_capability_major",
    "compute_capability_minor",
    "sm_count",
    "sm_clock_mhz",
    "fp32_lanes_per_clk_per_sm",
    "xu_ops_per_clk_per_sm",
    "smem_bytes_per_clk_per_sm",
    "dram_bandwidth_gb_s",
    "l2_bandwidth_gb_s",
    "l2_bytes",
    "smem_bytes_per_sm",
    "registers_per_sm",
    "max_threads_per_sm",
    "max_ctas_per_sm",
    "memory_gb",
    "link_bandwidth_gb_s",
    "link_latency_us"};
const std::vector<std::string> kTensorFields = {"fp16_bf16", "fp8", "tf32", "int8"};
// May be 0 (no fp8 path, a zero-latency link, compute capability x.0); all others must be > 0.
const std::set<std::string> kMayBeZero = {"compute_capability_minor", "link_latency_us",
                                          "tensor_flops_per_clk_per_sm.fp8"};

}  // namespace

// ---------------------------------------------------------------------------------------
// Catalog
// ---------------------------------------------------------------------------------------

TEST_CASE("gpu_catalog: the 17 canonical GPUs, unique and valid", "[gpu_spec][catalog]") {
  const auto catalog = gpu_catalog();
  REQUIRE(catalog.size() == kCanonicalNames.size());
  std::set<std::string> names;
  for (const GpuSpec& gpu : catalog) {
    INFO(gpu.name);
    CHECK_NOTHROW(gpu.validate());
    CHECK(names.insert(gpu.name).second);
    CHECK_FALSE(gpu.source.empty());
  }
  CHECK(names == std::set<std::string>(kCanonicalNames.begin(), kCanonicalNames.end()));

  // No alias names two GPUs, and no alias is another GPU's canonical name (case-insensitively).
  std::map<std::string, std::string> owner;
  const auto lower = [](std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
  };
  for (const GpuSpec& gpu : catalog) {
    CHECK(owner.emplace(lower(gpu.name), gpu.name).second);
    for (const std::string& alias : gpu.aliases) {
      INFO(gpu.name << " alias " << alias);
      const auto [it, fresh] = owner.emplace(lower(alias), gpu.name);
      CHECK((fresh || it->second == gpu.name));
    }
  }
}

TEST_CASE("find_gpu: canonical names and CUDA device names, case-insensitive", "[gpu_spec][catalog]") {
  for (const std::string& name : kCanonicalNames) {
    INFO(name);
    CHECK(find_gpu(name).name == name);
  }
  // Every alias finds the entry that lists it.
  for (const GpuSpec& gpu : gpu_catalog())
    for (const std::string& alias : gpu.aliases) {
      INFO(alias);
      CHECK(&find_gpu(alias) == &gpu);
    }
  CHECK(find_gpu("NVIDIA H100 80GB HBM3").name == "H100-SXM");
  CHECK(find_gpu("nvidia h100 80gb hbm3").name == "H100-SXM");
  CHECK(find_gpu("NVIDIA H100 80GB HBM3") == find_gpu("H100-SXM"));
  CHECK(find_gpu("h100-sxm").name == "H100-SXM");
  CHECK(find_gpu("H100-PCIE").name == "H100-PCIe");
  // Every name the published study gives its 11 GPUs (its hardware/*.json), the H100 calibrated.
  for (const char* published : {"NVIDIA A100-SXM4-80GB", "NVIDIA A40", "NVIDIA H100", "NVIDIA H20", "NVIDIA H200", "NVIDIA H800",
                                "NVIDIA L20", "NVIDIA L40", "NVIDIA RTX 6000 Ada Generation", "NVIDIA RTX A6000",
                                "NVIDIA RTX PRO 6000 Blackwell Server Edition"})
    CHECK_NOTHROW(find_gpu(published));
  CHECK(find_gpu("NVIDIA H100") == find_gpu("H100-SXM"));
  CHECK(find_gpu("NVIDIA H100").source.starts_with("pipeweave calibrate"));
  CHECK(find_gpu("l40s").name == "L40S");
  CHECK(find_gpu("l4").name == "L4");  // not confused with L40 or L40S
  CHECK(find_gpu("NVIDIA A100-SXM4-80GB").name == "A100-SXM4-80GB");
  CHECK(find_gpu("NVIDIA GeForce RTX 4090").name == "RTX-4090");
  CHECK(find_gpu("rtx-pro-6000-blackwell-server").name == "RTX-PRO-6000-Blackwell-Server");
  CHECK(default_gpu().name == "H100-SXM");
}

TEST_CASE("find_gpu: an unknown GPU throws an Error naming it and the known ones", "[gpu_spec][catalog]") {
  const std::string message = error_of([] { (void)find_gpu("Voodoo5-6000"); });
  CHECK_THAT(message, Contains("Voodoo5-6000"));
  CHECK_THAT(message, Contains("H100-SXM"));
  CHECK_THAT(message, Contains("B200"));
  CHECK_THROWS_AS(find_gpu(""), Error);
  CHECK_THROWS_AS(find_gpu("H100-SXM-128GB"), Error);  // no prefix matching
  CHECK_THROWS_AS(find_gpu("H10"), Error);
}

TEST_CASE("gpu_datasheets: spec-sheet figures hold", "[gpu_spec][catalog]") {
  const auto find_gpu = [](std::string_view name) -> const GpuSpec& { return find_gpu_datasheet(name); };
  SECTION("dense fp16/bf16 tensor peak = per-SM rate x SMs x clock, within 2% of the datasheet") {
    // Datasheet dense figures in TFLOPS (sparsity halved; FP32 accumulate where the part
    // has two rates, as a serving engine runs).
    const std::map<std::string, double> datasheet = {
        {"A100-SXM4-80GB", 312},  {"A40", 149.7},  {"H100-SXM", 989.4},      {"H100-PCIe", 756},
        {"H20", 148},             {"H200-SXM", 989}, {"H800", 989.4},        {"L20", 119.5},
        {"L40", 181.05},          {"L40S", 362.05}, {"L4", 121},             {"RTX-6000-Ada", 364.2},
        {"RTX-A6000", 154.8},     {"B200", 2250},   {"A10", 125},            {"RTX-4090", 165.2}};
    for (const auto& [name, tflops] : datasheet) {
      INFO(name);
      CHECK(dense_bf16_tflops(find_gpu(name)) == Approx(tflops).epsilon(0.02));
    }
  }
  SECTION("SM counts") {
    const std::map<std::string, int> sms = {
        {"A100-SXM4-80GB", 108}, {"A40", 84},   {"H100-SXM", 132},     {"H100-PCIe", 114}, {"H20", 78},
        {"H200-SXM", 132},       {"H800", 132}, {"L20", 92},           {"L40", 142},       {"L40S", 142},
        {"L4", 58},              {"RTX-6000-Ada", 142}, {"RTX-A6000", 84}, {"RTX-PRO-6000-Blackwell-Server", 188},
        {"B200", 148},           {"A10", 72},   {"RTX-4090", 128}};
    REQUIRE(sms.size() == kCanonicalNames.size());
    for (const auto& [name, count] : sms) {
      INFO(name);
      CHECK(find_gpu(name).sm_count == count);
    }
  }
  SECTION("DRAM bandwidth and capacity") {
    const std::map<std::string, double> dram = {{"A100-SXM4-80GB", 2039}, {"H100-SXM", 3350}, {"H200-SXM", 4800},
                                                {"H20", 4000},            {"B200", 8000},     {"L40S", 864},
                                                {"L4", 300},              {"A10", 600},       {"RTX-4090", 1008}};
    for (const auto& [name, gb_s] : dram) {
      INFO(name);
      CHECK(find_gpu(name).dram_bandwidth_gb_s == Approx(gb_s).epsilon(0.02));
    }
    CHECK(find_gpu("H200-SXM").dram_bandwidth_gb_s > find_gpu("H100-SXM").dram_bandwidth_gb_s);
    CHECK(find_gpu("B200").dram_bandwidth_gb_s > find_gpu("H200-SXM").dram_bandwidth_gb_s);
    CHECK(find_gpu("H200-SXM").memory_gb == Approx(141));
    CHECK(find_gpu("H100-SXM").memory_gb == Approx(80));
    CHECK(find_gpu("A100-SXM4-80GB").memory_gb == Approx(80));
  }
  SECTION("same die, same compute: H200 and H800 are H100-SXM's GH100") {
    const GpuSpec& h100 = find_gpu("H100-SXM");
    for (const char* name : {"H200-SXM", "H800"}) {
      INFO(name);
      const GpuSpec& gpu = find_gpu(name);
      CHECK(gpu.tensor_flops_per_clk_per_sm == h100.tensor_flops_per_clk_per_sm);
      CHECK(gpu.sm_count == h100.sm_count);
      CHECK(dense_bf16_tflops(gpu) == Approx(dense_bf16_tflops(h100)).epsilon(0.01));
    }
    // The H800's export cut is its NVLink; PCIe-only parts are slower still.
    CHECK(find_gpu("H800").link_bandwidth_gb_s < h100.link_bandwidth_gb_s);
    CHECK(find_gpu("L40S").link_bandwidth_gb_s < find_gpu("H800").link_bandwidth_gb_s);
    CHECK(find_gpu("H100-PCIe").link_bandwidth_gb_s < h100.link_bandwidth_gb_s);
    // The H20 is capped far below H100 compute but has more bandwidth.
    CHECK(dense_bf16_tflops(find_gpu("H20")) < dense_bf16_tflops(h100) / 4);
    CHECK(find_gpu("H20").dram_bandwidth_gb_s > h100.dram_bandwidth_gb_s);
  }
  SECTION("architecture, compute capability and the tensor paths each one has") {
    const std::map<std::string, std::set<std::pair<int, int>>> capability = {
        {"ampere", {{8, 0}, {8, 6}}}, {"ada", {{8, 9}}}, {"hopper", {{9, 0}}}, {"blackwell", {{10, 0}, {12, 0}}}};
    for (const GpuSpec& gpu : gpu_datasheets()) {
      INFO(gpu.name);
      REQUIRE(capability.count(gpu.architecture) == 1);
      CHECK(capability.at(gpu.architecture)
                .count({gpu.compute_capability_major, gpu.compute_capability_minor}) == 1);
      const TensorRates& rates = gpu.tensor_flops_per_clk_per_sm;
      if (gpu.architecture == "ampere") {
        CHECK(rates.fp8 == 0);  // fp8 tensor cores arrived with Ada and Hopper
      } else {
        CHECK(rates.fp8 == Approx(2 * rates.fp16_bf16));
      }
      CHECK(rates.tf32 == Approx(rates.fp16_bf16 / 2));
      CHECK(rates.int8 >= rates.fp16_bf16);
    }
    CHECK(find_gpu("A100-SXM4-80GB").architecture == "ampere");
    CHECK(find_gpu("RTX-4090").architecture == "ada");
    CHECK(find_gpu("H20").architecture == "hopper");
    CHECK(find_gpu("B200").architecture == "blackwell");
    CHECK(find_gpu("RTX-PRO-6000-Blackwell-Server").compute_capability_major == 12);
  }
  SECTION("per-SM limits follow the CUDA programming guide's compute-capability table") {
    // compute capability -> (max shared memory per SM in KiB, max threads per SM)
    const std::map<std::pair<int, int>, std::pair<double, int>> limits = {
        {{8, 0}, {164, 2048}}, {{8, 6}, {100, 1536}}, {{8, 9}, {100, 1536}},
        {{9, 0}, {228, 2048}}, {{10, 0}, {228, 2048}}, {{12, 0}, {100, 1536}}};
    for (const GpuSpec& gpu : gpu_datasheets()) {
      INFO(gpu.name);
      const auto& [smem_kib, threads] = limits.at({gpu.compute_capability_major, gpu.compute_capability_minor});
      CHECK(gpu.smem_bytes_per_sm == smem_kib * 1024);
      CHECK(gpu.max_threads_per_sm == threads);
      CHECK(gpu.registers_per_sm == 65536);
      CHECK(gpu.clock_hz() == gpu.sm_clock_mhz * 1e6);
    }
  }
}

// ---------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------

TEST_CASE("gpu_catalog: what kernels sustain, calibrated or estimated from the data sheet", "[gpu_spec][catalog]") {
  // Calibrated boards are their calibrated specs (the calibration tests check those files).
  CHECK_THAT(find_gpu("H100-SXM").source, Contains("pipeweave calibrate"));
  CHECK_THAT(find_gpu("H200-SXM").source, Contains("pipeweave calibrate"));
  for (const GpuSpec& gpu : gpu_catalog()) {
    INFO(gpu.name);
    const GpuSpec& sheet = find_gpu_datasheet(gpu.name);
    CHECK(gpu.max_clock_mhz == sheet.max_clock_mhz);
    CHECK(gpu.power_limit_w == sheet.power_limit_w);
    CHECK(gpu.sm_clock_mhz <= gpu.max_clock_mhz + 1e-9);
    CHECK(gpu.sustained_clock_mhz <= gpu.max_clock_mhz);
    CHECK(gpu.sustained_clock_mhz >= gpu.sm_clock_mhz);  // GEMMs lose less clock than the pure tensor load
    CHECK(gpu.dram_bandwidth_gb_s < sheet.dram_bandwidth_gb_s);
    CHECK(gpu.sm_count == sheet.sm_count);
    CHECK(gpu.tensor_flops_per_clk_per_sm.fp8 == Approx(sheet.tensor_flops_per_clk_per_sm.fp8).epsilon(0.01));
    if (gpu.name != "H100-SXM" && gpu.name != "H200-SXM") CHECK_THAT(gpu.source, Contains("estimated from the data sheet"));
  }
  // Worked: the H800 is the H100's board (700 W, 1070.6 TFLOP/s at 1980 MHz): below the
  // 1.131 W per TFLOP/s that holds the clock, it loses the H100's 1.2003x: 1980 / 1.2003 MHz.
  const GpuSpec& h800 = find_gpu("H800");
  CHECK(h800.sm_clock_mhz == Approx(1980 / 1.2003).epsilon(0.002));
  CHECK(h800.sustained_slowdown() == Approx(1 + 0.78 * 0.2003).epsilon(0.002));
  CHECK(h800.sustained_utilization == 0.92);
  CHECK(h800.dram_bandwidth_gb_s == Approx(0.93 * 3350));  // HBM reads reach 93%
  // The L40 runs its tensor cores at half rate (FP32 accumulate): 181 TFLOP/s on 300 W holds 2490 MHz.
  CHECK(find_gpu("L40").sm_clock_mhz == 2490);
  CHECK(find_gpu("L40").sustained_slowdown() == 1);
  CHECK(find_gpu("L40").dram_bandwidth_gb_s == Approx(0.90 * 864));  // GDDR: 90%, an estimate
  // The RTX 6000 Ada puts full-rate tensor cores on the same 300 W: it cannot hold 2505 MHz.
  // 364 TFLOP/s: 0.82 W per TFLOP/s, cube root of 1.131 / 0.82 = 1.11.
  CHECK(find_gpu("RTX-6000-Ada").sm_clock_mhz == Approx(2505 / std::cbrt(1.131 / (300 / (1024 * 142 * 2.505e-3)))).epsilon(0.001));
  // GA100 on TSMC N7 needs 1.4x the power per flop to hold its clock.
  const double a100_loss = std::cbrt(1.131 * 1.4 / (400 / (2048 * 108 * 1.41e-3)));
  CHECK(find_gpu("A100-SXM4-80GB").sm_clock_mhz == Approx(1410 / a100_loss).epsilon(0.001));
  // The data sheets keep their own figures.
  CHECK(find_gpu_datasheet("H100-SXM").sm_clock_mhz == 1830);
  CHECK(find_gpu_datasheet("H100-SXM").dram_bandwidth_gb_s == 3350);
  CHECK(find_gpu_datasheet("H100-SXM").sustained_clock_mhz == 0);
}

TEST_CASE("GpuSpec JSON: to_json -> gpu_spec_from_json gives an equal spec", "[gpu_spec][json]") {
  for (const GpuSpec& gpu : gpu_catalog()) {
    INFO(gpu.name);
    const std::string text = to_json(gpu);
    const GpuSpec back = gpu_spec_from_json(text);
    CHECK(back == gpu);
    CHECK(to_json(back) == text);
  }
  const GpuSpec custom = custom_spec();
  CHECK(gpu_spec_from_json(to_json(custom)) == custom);

  // The document is the documented format.
  const json document = json::parse(to_json(find_gpu("H100-SXM")));
  CHECK(document.at("format") == "pipeweave-gpu");
  CHECK(document.at("version") == 1);
  CHECK(document.at("sm_count") == 132);
  CHECK(document.at("tensor_flops_per_clk_per_sm").at("fp16_bf16") == find_gpu("H100-SXM").tensor_flops_per_clk_per_sm.fp16_bf16);
}

TEST_CASE("GpuSpec JSON: save_gpu_spec and load_gpu_spec through a file", "[gpu_spec][json]") {
  const auto path = std::filesystem::temp_directory_path() / "pipeweave_test_gpu_spec.json";
  const GpuSpec custom = custom_spec();
  save_gpu_spec(custom, path);
  CHECK(load_gpu_spec(path) == custom);
  CHECK(resolve_gpu(path.string()) == custom);

  save_gpu_spec(find_gpu("B200"), path);
  CHECK(load_gpu_spec(path) == find_gpu("B200"));

  // An invalid spec is not written.
  GpuSpec broken = custom;
  broken.sm_count = 0;
  CHECK_THAT(error_of([&] { save_gpu_spec(broken, path); }), Contains("gpu.sm_count"));
  CHECK(load_gpu_spec(path) == find_gpu("B200"));

  // Errors from a file name the file and the field.
  json document = valid_document();
  document["dram_bandwidth_gb_s"] = -1;
  std::ofstream(path) << document.dump();
  const std::string message = error_of([&] { (void)load_gpu_spec(path); });
  CHECK_THAT(message, Contains(path.string()));
  CHECK_THAT(message, Contains("gpu.dram_bandwidth_gb_s"));
  std::filesystem::remove(path);

  const auto missing = std::filesystem::temp_directory_path() / "pipeweave_no_such_spec.json";
  CHECK_THAT(error_of([&] { (void)load_gpu_spec(missing); }), Contains(missing.string()));
}

TEST_CASE("GpuSpec JSON: the committed test spec file loads", "[gpu_spec][json]") {
  const std::string path = std::string(PIPEWEAVE_TEST_DATA_DIR) + "/h100_spec.json";
  const GpuSpec gpu = load_gpu_spec(path);
  CHECK(gpu.name == "H100-SXM");
  CHECK(gpu.sm_count == 132);
  CHECK_NOTHROW(gpu.validate());
}

TEST_CASE("GpuSpec JSON: every required field, when missing, is named", "[gpu_spec][json]") {
  std::vector<std::string> top = kTextFields;
  top.insert(top.end(), kTopNumberFields.begin(), kTopNumberFields.end());
  top.push_back("aliases");
  top.push_back("tensor_flops_per_clk_per_sm");
  for (const std::string& field : top) {
    json document = valid_document();
    REQUIRE(document.contains(field));
    document.erase(field);
    const std::string message = spec_error(document);
    INFO("removed " << field << ": " << message);
    CHECK_THAT(message, Contains("gpu." + field));
    CHECK_THAT(message, Contains("missing"));
  }
  for (const std::string& field : kTensorFields) {
    json document = valid_document();
    document["tensor_flops_per_clk_per_sm"].erase(field);
    const std::string message = spec_error(document);
    INFO("removed tensor " << field << ": " << message);
    CHECK_THAT(message, Contains("gpu.tensor_flops_per_clk_per_sm." + field));
    CHECK_THAT(message, Contains("missing"));
  }
}

TEST_CASE("GpuSpec JSON: zero or negative figures are refused, naming field and value", "[gpu_spec][json]") {
  // `slot` points into `document`; the value is written as the field's own JSON type.
  const auto check = [](const std::string& field, json document, const json::json_pointer& slot, int value) {
    const bool integral = document[slot].is_number_integer();
    if (integral) document[slot] = value;
    else document[slot] = static_cast<double>(value);
    const bool refused = value < 0 || kMayBeZero.count(field) == 0;
    INFO(field << " = " << value << (integral ? " (integer)" : " (number)"));
    if (!refused) {
      CHECK_NOTHROW(gpu_spec_from_json(document.dump()));
      return;
    }
    const std::string message = spec_error(document);
    INFO(message);
    CHECK_THAT(message, Contains("gpu." + field));
    CHECK_THAT(message, Contains("got " + std::to_string(value)));
  };
  for (const std::string& field : kTopNumberFields) {
    if (field == "version") continue;  // a format version, checked below
    for (const int value : {0, -3}) check(field, valid_document(), json::json_pointer("/" + field), value);
  }
  for (const std::string& field : kTensorFields)
    for (const int value : {0, -2})
      check("tensor_flops_per_clk_per_sm." + field, valid_document(),
            json::json_pointer("/tensor_flops_per_clk_per_sm/" + field), value);

  // Fractional values are shown as given.
  json document = valid_document();
  document["tensor_flops_per_clk_per_sm"]["int8"] = -2.5;
  CHECK_THAT(spec_error(document), Contains("got -2.5"));
  // A GPU reaches the clock its rates are per: a max_clock_mhz below sm_clock_mhz was read as given
  document = valid_document();
  REQUIRE(document["sm_clock_mhz"].get<double>() > 100);
  document["max_clock_mhz"] = 100;
  document.erase("sustained_clock_mhz");
  CHECK_THAT(spec_error(document), Contains("gpu.max_clock_mhz must be at least sm_clock_mhz") && Contains("got 100"));
  // A clock measured under load a little past the reported maximum is a calibration's, not a typo
  document["max_clock_mhz"] = document["sm_clock_mhz"].get<double>() / 1.05;
  CHECK_NOTHROW(gpu_spec_from_json(document.dump()));
}

TEST_CASE("GpuSpec JSON: wrong types, unknown fields, wrong format, malformed text", "[gpu_spec][json]") {
  SECTION("a number field holding text") {
    json document = valid_document();
    document["sm_clock_mhz"] = "fast";
    std::string message = spec_error(document);
    CHECK_THAT(message, Contains("gpu.sm_clock_mhz"));
    CHECK_THAT(message, Contains("fast"));
    document = valid_document();
    document["tensor_flops_per_clk_per_sm"]["tf32"] = "1024";
    CHECK_THAT(spec_error(document), Contains("gpu.tensor_flops_per_clk_per_sm.tf32"));
    document = valid_document();
    document["memory_gb"] = nullptr;
    CHECK_THAT(spec_error(document), Contains("gpu.memory_gb"));
  }
  SECTION("an integer beyond 32 bits is refused, not wrapped (4294967428 would read as 132)") {
    json document = valid_document();
    document["sm_count"] = 4294967428ull;
    std::string message = spec_error(document);
    CHECK_THAT(message, Contains("gpu.sm_count"));
    CHECK_THAT(message, Contains("4294967428"));
    document["sm_count"] = 18446744073709551615ull;
    CHECK_THAT(spec_error(document), Contains("gpu.sm_count"));
  }
  SECTION("figures no GPU could have are refused, naming the field") {
    for (const auto& [field, value] : std::vector<std::pair<std::string, json>>{
             {"sm_count", 2147483647}, {"sm_clock_mhz", 1e308}, {"dram_bandwidth_gb_s", 1e-300},
             {"link_latency_us", 1e308}, {"l2_bandwidth_gb_s", 1e300}}) {
      json document = valid_document();
      document[field] = value;
      INFO(field);
      CHECK_THAT(spec_error(document), Contains("gpu." + field + " must be within"));
    }
  }
  SECTION("a huge value is quoted in part: one short error line") {
    json document = valid_document();
    document["sm_clock_mhz"] = std::string(1 << 20, 'x');
    const std::string message = spec_error(document);
    CHECK_THAT(message, Contains("gpu.sm_clock_mhz"));
    CHECK_THAT(message, Contains("... (1048578 bytes)"));  // the string's dump, quotes included
    CHECK(message.size() < 400);
  }
  SECTION("JSON nested past any format's depth is refused as it is read, not walked") {
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    CHECK_THAT(error_of([&] { (void)gpu_spec_from_json(deep); }), Contains("nests JSON more than 64 levels deep"));
    const std::string deep_object = "{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}";
    CHECK_THAT(error_of([&] { (void)gpu_spec_from_json(deep_object); }), Contains("levels deep"));
  }
  SECTION("the architecture is the compute capability's") {
    json document = valid_document();
    document["architecture"] = "volta";
    CHECK_THAT(spec_error(document), Contains("gpu.architecture must be \"" + std::string(pipeweave::architecture_of(
                                                  document["compute_capability_major"].get<int>(), document["compute_capability_minor"].get<int>())) +
                                              "\", the architecture of compute capability") &&
                                         Contains("got \"volta\""));
    CHECK(pipeweave::architecture_of(8, 0) == "ampere");
    CHECK(pipeweave::architecture_of(8, 9) == "ada");
    CHECK(pipeweave::architecture_of(9, 0) == "hopper");
    CHECK(pipeweave::architecture_of(12, 0) == "blackwell");
    CHECK(pipeweave::architecture_of(7, 5).empty());  // (no label checked before 8.0, nor past 12.x)
    CHECK(pipeweave::architecture_of(13, 0).empty());
  }
  SECTION("a key twice in one object is refused, not read as its last value") {
    std::string text = valid_document().dump();
    text.pop_back();  // the closing brace
    CHECK_THAT(error_of([&] { (void)gpu_spec_from_json(text + ", \"sm_count\": 64}"); }),
               Contains("GPU spec gives the key \"sm_count\" twice in one object"));
    // The same key in two objects, and an object's keys again in the next one of a list, are fine.
    json document = valid_document();
    document["calibration"] = {{"runs", json::array({{{"seconds", 1}}, {{"seconds", 2}}})}, {"note", {{"seconds", 3}}}};
    CHECK_NOTHROW(gpu_spec_from_json(document.dump()));
  }
  SECTION("an integer field holding a fraction") {
    json document = valid_document();
    document["sm_count"] = 132.5;
    const std::string message = spec_error(document);
    CHECK_THAT(message, Contains("gpu.sm_count"));
    CHECK_THAT(message, Contains("132.5"));
  }
  SECTION("text fields holding other types") {
    json document = valid_document();
    document["name"] = 5;
    CHECK_THAT(spec_error(document), Contains("gpu.name"));
    document = valid_document();
    document["aliases"] = "NVIDIA Test GPU";
    CHECK_THAT(spec_error(document), Contains("gpu.aliases"));
    document = valid_document();
    document["aliases"] = {"ok", 3};
    CHECK_THAT(spec_error(document), Contains("gpu.aliases"));
    document = valid_document();
    document["tensor_flops_per_clk_per_sm"] = 4096;
    CHECK_THAT(spec_error(document), Contains("gpu.tensor_flops_per_clk_per_sm"));
  }
  SECTION("empty name or architecture") {
    json document = valid_document();
    document["name"] = "";
    CHECK_THAT(spec_error(document), Contains("gpu.name"));
    document = valid_document();
    document["architecture"] = "";
    CHECK_THAT(spec_error(document), Contains("gpu.architecture"));
  }
  SECTION("unknown extra fields") {
    json document = valid_document();
    document["boost_clock_mhz"] = 1980;
    std::string message = spec_error(document);
    CHECK_THAT(message, Contains("gpu.boost_clock_mhz"));
    CHECK_THAT(message, Contains("not a known field"));
    document = valid_document();
    document["tensor_flops_per_clk_per_sm"]["fp4"] = 16384;
    CHECK_THAT(spec_error(document), Contains("gpu.tensor_flops_per_clk_per_sm.fp4"));
    // A calibration record is a known, optional field.
    document = valid_document();
    document["calibration"] = {{"date", "2025-01-01"}};
    CHECK(gpu_spec_from_json(document.dump()) == custom_spec());
  }
  SECTION("wrong format or version") {
    json document = valid_document();
    document["format"] = "pipeweave-mlp";
    std::string message = spec_error(document);
    CHECK_THAT(message, Contains("gpu.format"));
    CHECK_THAT(message, Contains("pipeweave-mlp"));
    document = valid_document();
    document["version"] = 2;
    message = spec_error(document);
    CHECK_THAT(message, Contains("gpu.version"));
    CHECK_THAT(message, Contains("2"));
  }
  SECTION("malformed JSON text") {
    const std::string text = to_json(custom_spec());
    CHECK_THAT(error_of([&] { (void)gpu_spec_from_json(text.substr(0, text.size() / 2)); }), Contains("not valid JSON"));
    CHECK_THAT(error_of([] { (void)gpu_spec_from_json(""); }), Contains("not valid JSON"));
    CHECK_THAT(error_of([] { (void)gpu_spec_from_json("{'name': 'x'}"); }), Contains("not valid JSON"));
    CHECK_THAT(error_of([] { (void)gpu_spec_from_json("[]"); }), Contains("JSON object"));
    // The parser ends its input at a NUL byte: a spec followed by one and garbage was taken for the spec.
    const std::string with_nul = text + std::string(1, '\0') + "garbage{";
    CHECK(error_of([&] { (void)gpu_spec_from_json(with_nul); }) ==
          "GPU spec is not valid JSON: a NUL byte at offset " + std::to_string(text.size()));
    // A run of white space past a mebibyte is refused before parsing (the parser's error message
    // held every byte of it, a line break as eight): found wherever it lies, not where a pass of
    // every byte would look
    const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    for (const std::size_t at : {std::size_t{0}, std::size_t{1}, text.size() / 2}) {
      const std::size_t length = (std::size_t{1} << 20) + 1;
      const std::string padded = text.substr(0, at) + std::string(length, '\n') + text.substr(at);
      std::size_t begin = at, end = at + length;  // (the run, with the spec's own white space either side)
      while (begin > 0 && space(padded[begin - 1])) --begin;
      while (end < padded.size() && space(padded[end])) ++end;
      CHECK(error_of([&] { (void)gpu_spec_from_json(padded); }) ==
            "GPU spec is not JSON this library reads: " + std::to_string(end - begin) + " bytes of white space in a row at offset " +
                std::to_string(begin) + " (at most 1048576)");
    }
    // ... at the bound, the spec reads as itself
    CHECK(gpu_spec_from_json(std::string(std::size_t{1} << 20, ' ') + text) == gpu_spec_from_json(text));
    std::size_t trailing = 0;  // (the spec's own white space at its end, counted in the run)
    while (trailing < text.size() && space(text[text.size() - 1 - trailing])) ++trailing;
    CHECK(gpu_spec_from_json(text + std::string((std::size_t{1} << 20) - trailing, '\t')) == gpu_spec_from_json(text));
    // Found by tests/fuzz: the parser's message ends with the raw bytes it last read.
    CHECK(error_of([] { (void)gpu_spec_from_json("\xef"); }) ==
          "GPU spec is not valid JSON: [json.exception.parse_error.101] parse error at line 1, column 2: syntax error while "
          "parsing value - invalid BOM; must be 0xEF 0xBB 0xBF if given; last read: '\\xef'");
  }
  SECTION("names are a line of text: at most 128 bytes, no control characters (found by tests/fuzz)") {
    json document = valid_document();
    document["name"] = std::string(100000, 'x');
    CHECK(spec_error(document) == "gpu.name must be at most 128 bytes of text without control characters, got \"" +
                                      std::string(120, 'x') + "... (100000 bytes)\"");
    document = valid_document();
    document["architecture"] = "Hopper\nH100";
    CHECK(spec_error(document) == "gpu.architecture must be at most 128 bytes of text without control characters, got \"Hopper\\x0aH100\"");
    document = valid_document();
    document["architecture"] = json::array({"\x7f\xc3\xa9"});  // found by tests/fuzz: DEL and a cut inside a character
    CHECK(spec_error(document) == "gpu.architecture must be a string, got [\"\\x7f\xc3\xa9\"]");
    document["architecture"] = json::array({std::string(79, 'x') + "\xc3\xa9"});
    CHECK(spec_error(document) == "gpu.architecture must be a string, got [\"" + std::string(78, 'x') + "... (85 bytes)");
    document = valid_document();
    document["name"] = "GeForce \u00e9t\u00e9";  // UTF-8 text is text
    CHECK_NOTHROW(gpu_spec_from_json(document.dump()));
  }
  SECTION("a number no double holds is an Error too") {
    std::string text = to_json(custom_spec());
    const std::string key = "\"memory_gb\": ";
    const std::size_t at = text.find(key);
    REQUIRE(at != std::string::npos);
    const std::size_t end = text.find_first_of(",\n", at + key.size());
    text.replace(at + key.size(), end - at - key.size(), "1e400");
    CHECK_THAT(error_of([&] { (void)gpu_spec_from_json(text); }), Contains("1e400"));
  }
}

TEST_CASE("resolve_gpu: a .json path is a file, anything else a catalog name", "[gpu_spec][json]") {
  CHECK(resolve_gpu("H100-SXM") == find_gpu("H100-SXM"));
  CHECK(resolve_gpu("NVIDIA H100 80GB HBM3") == find_gpu("H100-SXM"));
  CHECK(resolve_gpu("b200") == find_gpu("B200"));

  const auto path = std::filesystem::temp_directory_path() / "pipeweave_test_resolve.json";
  save_gpu_spec(custom_spec(), path);
  CHECK(resolve_gpu(path.string()) == custom_spec());
  // The same spec gzip-compressed, named .json.gz.
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto compressed = std::filesystem::temp_directory_path() / "pipeweave_test_resolve.json.gz";
  gzFile out = gzopen(compressed.c_str(), "wb");
  REQUIRE(out);
  REQUIRE(gzwrite(out, text.data(), static_cast<unsigned>(text.size())) > 0);
  REQUIRE(gzclose(out) == Z_OK);
  CHECK(resolve_gpu(compressed.string()) == custom_spec());
  std::filesystem::remove(compressed);
  std::filesystem::remove(path);

  // A missing .json file is reported as a file, not looked up in the catalog.
  const std::string missing = error_of([] { (void)resolve_gpu("/nonexistent/dir/my_gpu.json"); });
  CHECK_THAT(missing, Contains("/nonexistent/dir/my_gpu.json"));
  CHECK_THAT(missing, !Contains("unknown GPU"));
  // Without the suffix the same text is a name, and an unknown one.
  const std::string unknown = error_of([] { (void)resolve_gpu("/nonexistent/dir/my_gpu"); });
  CHECK_THAT(unknown, Contains("unknown GPU"));
  CHECK_THAT(unknown, Contains("/nonexistent/dir/my_gpu"));
}
