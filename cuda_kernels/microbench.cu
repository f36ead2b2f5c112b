// pipeweave-microbench: measures, on the GPU in hand, the sustained throughput of each
// pipeline the demand model uses, and prints the raw timings as JSON (format
// "pipeweave-microbench", version 1). `pipeweave calibrate` runs it and turns the timings
// into a GpuSpec; that processing is plain C++ in the library (pipeweave/calibration.hpp),
// so that it is tested without a GPU. This file only measures.
//
//   pipeweave-microbench [--quick] [--only NAME[,NAME...]] [--device N] [--sms N] [--out FILE] [--list]
//
// Progress goes to stderr, the JSON to stdout (or FILE). Exit status 2, with one line
// "pipeweave-microbench: error: ..." naming the cause, when there is no usable GPU.
//
// How each figure is taken:
// - Every kernel is timed with CUDA events around one launch; each benchmark sizes its
//   launch to a target duration (25 ms; --quick: 4 ms), warms up (compute: 1 s, so that the
//   clock settles; memory: 0.1 s), then repeats 10 times (--quick: 3); median and spread are
//   computed by the consumer from all repetitions.
// - The SM clock actually sustained is read inside the compute kernels: each CTA's first
//   thread reads clock64() and %globaltimer at its start and end; the run's clock is the
//   median over CTAs of cycles / nanoseconds.
// - Compute kernels run exactly one CTA per SM (each asks for more than half the SM's shared
//   memory), so no SM gets two while another gets none.
// - Tensor pipe: wgmma (sm_90a, the instruction Hopper GEMMs use) with both operands in
//   shared memory, two warpgroups per SM, eight m64n256 instructions per commit group and one
//   group in flight; mma.sync (sm_80/86/89, and on Hopper as an extra figure, since
//   FlashAttention-2 uses it there) with eight independent accumulators per warp. Operands
//   are random (zeros draw less power and let the clock run higher than real kernels see).
// - FP32: eight independent FFMA chains per thread; XU: eight independent MUFU.EX2 chains.
// - Shared memory: 16-byte loads, consecutive threads at consecutive addresses (no bank
//   conflicts), results folded so that no load is dead.
// - DRAM: 16-byte loads/stores over 2 GiB buffers (40x the largest L2 here), a grid-stride
//   loop with four loads in flight per thread, a full GPU of resident threads.
// - L2: the same read kernel over a quarter of the L2, with loads that skip L1 (ld.global.cg).
// - Launch: back-to-back empty kernels; the time per launch.
// - Part of the GPU (--sms N): every kernel runs in a green context of N SMs, rounded up to the
//   hardware's granularity (tool_support.cuh), on its stream, and every launch is sized for the
//   SMs obtained (one CTA per SM, a full set of resident threads): the figures are those of a GPU
//   with that many SMs and this one's memory system. The log's device gives that count as
//   sm_count and sm_limit, the device's own as device_sm_count.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "statistics.hpp"  // the library's (src/): the tools and the library share one median
#include "tool_support.cuh"
#include "wgmma_operands.cuh"

namespace {

constexpr const char* kToolName = "pipeweave-microbench";
[[noreturn]] void fail(const std::string& message) { pipeweave_tool::fail(kToolName, message); }
using pipeweave_tool::driver_version;
using pipeweave_tool::json_string;
using pipeweave_tool::mix;
using pipeweave::detail::median;

// Where every kernel is launched and timed: null (the legacy default stream, as always) on the
// whole GPU; with --sms N, the green context's stream (tool_support.cuh).
cudaStream_t g_stream = nullptr;

// ---- Device helpers ------------------------------------------------------------------------

struct CtaClock {
  long long cycles;
  unsigned long long nanoseconds;
};

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Reads the SM clock and the global timer at the start and the end of a CTA's timed loop.
struct ClockProbe {
  long long start_cycles = 0;
  unsigned long long start_ns = 0;
  __device__ void start() {
    __syncthreads();
    if (threadIdx.x == 0) start_ns = global_ns(), start_cycles = clock64();
  }
  __device__ void stop(CtaClock* clocks) {
    __syncthreads();
    if (threadIdx.x == 0) {
      const long long cycles = clock64() - start_cycles;
      clocks[blockIdx.x] = CtaClock{cycles, global_ns() - start_ns};
    }
  }
};

__device__ __forceinline__ float random_unit(uint32_t seed) {  // in [-1, 1)
  return static_cast<float>(mix(seed) >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

enum class TensorKind { bf16, fp8, tf32, int8 };

// One 32-bit word of random operand data of the kind: finite values of magnitude below 2.
template <TensorKind kind>
__device__ __forceinline__ uint32_t random_word(uint32_t seed) {
  if constexpr (kind == TensorKind::bf16) {
    const uint32_t lo = __float_as_uint(random_unit(2 * seed)) >> 16;
    const uint32_t hi = __float_as_uint(random_unit(2 * seed + 1)) & 0xffff0000u;
    return hi | lo;
  } else if constexpr (kind == TensorKind::tf32) {
    return __float_as_uint(random_unit(seed));
  } else if constexpr (kind == TensorKind::fp8) {
    return mix(seed) & 0xbfbfbfbfu;  // e4m3 with the exponent's top bit clear: |x| < 2, never NaN
  } else {
    return mix(seed);
  }
}

template <TensorKind kind>
using Accumulator = std::conditional_t<kind == TensorKind::int8, int, float>;

// ---- Tensor pipe: wgmma (sm_90a) -------------------------------------------------------------

constexpr int kWgmmaWarpgroups = 2;      // per CTA, one CTA per SM
constexpr int kWgmmaPerGroup = 8;        // instructions per commit group
constexpr int kWgmmaABytes = 2048;       // 64 rows x 32 bytes of K
constexpr int kWgmmaBBytes = 8192;       // 256 rows x 32 bytes of K
constexpr int kWgmmaOperandBytes = 16384;

// Every m64n256 shape below takes 32 bytes of K per row: k16 bf16, k32 fp8/int8, k8 tf32.
template <TensorKind kind>
constexpr double wgmma_flops() {
  constexpr double k = kind == TensorKind::bf16 ? 16 : kind == TensorKind::tf32 ? 8 : 32;
  return 2.0 * 64 * 256 * k;
}

static_assert(kWgmmaABytes <= kWgmmaOperandBytes - kWgmmaBBytes, "A and B overlap");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Shared-memory matrix descriptor, no swizzle: 8x16-byte core matrices, the two K halves of a
// row group 128 bytes apart (leading byte offset), row groups 256 bytes apart (stride).
__device__ __forceinline__ uint64_t smem_descriptor(uint32_t smem_address) {
  return static_cast<uint64_t>((smem_address & 0x3ffff) >> 4) | (static_cast<uint64_t>(128 >> 4) << 16) |
         (static_cast<uint64_t>(256 >> 4) << 32);
}
#endif

template <TensorKind kind>
__device__ __forceinline__ void wgmma(Accumulator<kind> (&d)[128], uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (kind == TensorKind::bf16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " PW_WGMMA_ACC_REGS
                 ", %128, %129, p, 1, 1, 0, 0;\n}\n"
                 : PW_WGMMA_ACC_F32(d)
                 : "l"(a), "l"(b), "r"(1));
  } else if constexpr (kind == TensorKind::fp8) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 " PW_WGMMA_ACC_REGS
                 ", %128, %129, p, 1, 1;\n}\n"
                 : PW_WGMMA_ACC_F32(d)
                 : "l"(a), "l"(b), "r"(1));
  } else if constexpr (kind == TensorKind::tf32) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 " PW_WGMMA_ACC_REGS
                 ", %128, %129, p, 1, 1;\n}\n"
                 : PW_WGMMA_ACC_F32(d)
                 : "l"(a), "l"(b), "r"(1));
  } else {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 " PW_WGMMA_ACC_REGS
                 ", %128, %129, p;\n}\n"
                 : PW_WGMMA_ACC_S32(d)
                 : "l"(a), "l"(b), "r"(1));
  }
#endif
}

template <TensorKind kind>
__global__ void __launch_bounds__(kWgmmaWarpgroups * 128, 1)
    wgmma_kernel(long long iterations, CtaClock* clocks, float* sink) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) uint32_t smem_words[];
  for (int i = threadIdx.x; i < kWgmmaOperandBytes / 4; i += blockDim.x)
    smem_words[i] = random_word<kind>(blockIdx.x * 65536u + i);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // tensor cores read what st.shared wrote
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_words));
  const uint64_t a = smem_descriptor(base), b = smem_descriptor(base + kWgmmaOperandBytes - kWgmmaBBytes);
  Accumulator<kind> d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0;

  ClockProbe probe;
  probe.start();
  for (long long it = 0; it < iterations; ++it) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int j = 0; j < kWgmmaPerGroup; ++j) wgmma<kind>(d, a, b);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  probe.stop(clocks);

  float sum = 0;
#pragma unroll
  for (int i = 0; i < 128; ++i) sum += static_cast<float>(d[i]);
  sink[blockIdx.x * blockDim.x + threadIdx.x] = sum;
#else
  (void)iterations, (void)clocks, (void)sink;
  __trap();
#endif
}

// ---- Tensor pipe: mma.sync (sm_80 and later) -------------------------------------------------

constexpr int kMmaChains = 8;  // independent accumulators per warp

template <TensorKind kind>
constexpr double mma_sync_flops() {  // m16n8 with 32 bytes of K: k16 bf16, k8 tf32, k32 fp8/int8
  constexpr double k = kind == TensorKind::bf16 ? 16 : kind == TensorKind::tf32 ? 8 : 32;
  return 2.0 * 16 * 8 * k;
}

template <TensorKind kind>
__device__ __forceinline__ void mma_sync(Accumulator<kind> (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kind == TensorKind::bf16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (kind == TensorKind::tf32) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (kind == TensorKind::int8) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
#if __CUDA_ARCH__ >= 890
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    __trap();  // no fp8 tensor path before sm_89; the host never launches this
#endif
  }
#endif
}

template <TensorKind kind>
__global__ void __launch_bounds__(1024, 1) mma_sync_kernel(long long iterations, CtaClock* clocks, float* sink) {
  const uint32_t seed = (blockIdx.x * blockDim.x + threadIdx.x) * 8u;
  uint32_t a[4], b[2];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = random_word<kind>(seed + i);
#pragma unroll
  for (int i = 0; i < 2; ++i) b[i] = random_word<kind>(seed + 4 + i);
  Accumulator<kind> c[kMmaChains][4] = {};

  ClockProbe probe;
  probe.start();
  for (long long it = 0; it < iterations; ++it) {
#pragma unroll
    for (int j = 0; j < kMmaChains; ++j) mma_sync<kind>(c[j], a, b);
  }
  probe.stop(clocks);

  float sum = 0;
#pragma unroll
  for (int j = 0; j < kMmaChains; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) sum += static_cast<float>(c[j][i]);
  sink[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// ---- FP32 and XU pipes -----------------------------------------------------------------------

constexpr int kChains = 8;
constexpr int kUnroll = 32;  // instructions of each chain per loop trip: loop overhead < 2% of issue

__global__ void __launch_bounds__(1024, 1)
    ffma_kernel(long long iterations, float multiplier, float addend, CtaClock* clocks, float* sink) {
  float x[kChains];
#pragma unroll
  for (int j = 0; j < kChains; ++j) x[j] = random_unit(blockIdx.x * blockDim.x + threadIdx.x + j * 7919u);
  ClockProbe probe;
  probe.start();
  for (long long it = 0; it < iterations; ++it) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int j = 0; j < kChains; ++j) x[j] = fmaf(x[j], multiplier, addend);
  }
  probe.stop(clocks);
  float sum = 0;
#pragma unroll
  for (int j = 0; j < kChains; ++j) sum += x[j];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// x <- 2^-x: one MUFU.EX2 per step (the negation folds into its operand); stays in (0.5, 1].
__global__ void __launch_bounds__(1024, 1) ex2_kernel(long long iterations, CtaClock* clocks, float* sink) {
  float x[kChains];
#pragma unroll
  for (int j = 0; j < kChains; ++j) x[j] = 0.5f + 0.5f * random_unit(blockIdx.x * blockDim.x + threadIdx.x + j * 7919u);
  ClockProbe probe;
  probe.start();
  for (long long it = 0; it < iterations; ++it) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int j = 0; j < kChains; ++j) asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(x[j]) : "f"(-x[j]));
  }
  probe.stop(clocks);
  float sum = 0;
#pragma unroll
  for (int j = 0; j < kChains; ++j) sum += x[j];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// ---- Shared memory ---------------------------------------------------------------------------

constexpr int kSmemRows = 4;  // each thread reads 16 bytes from each of 4 rows of blockDim.x x 16 bytes

__global__ void __launch_bounds__(1024, 1) smem_kernel(long long iterations, CtaClock* clocks, float* sink) {
  extern __shared__ __align__(16) uint32_t words[];
  const int row_bytes = blockDim.x * 16;
  for (int i = threadIdx.x; i < kSmemRows * row_bytes / 4; i += blockDim.x) words[i] = mix(i);
  const uint32_t address = static_cast<uint32_t>(__cvta_generic_to_shared(words)) + threadIdx.x * 16;
  uint32_t folded[4] = {0, 0, 0, 0};
  ClockProbe probe;
  probe.start();
  for (long long it = 0; it < iterations; ++it) {
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
      for (int r = 0; r < kSmemRows; ++r) {
        uint32_t v0, v1, v2, v3;
        // .volatile: without it ptxas merges the repeated loads of one address (seen: 4x too fast).
        asm volatile("ld.volatile.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3)
                     : "r"(address + r * row_bytes));
        folded[0] ^= v0, folded[1] += v1, folded[2] ^= v2, folded[3] += v3;
      }
  }
  probe.stop(clocks);
  sink[blockIdx.x * blockDim.x + threadIdx.x] = static_cast<float>(folded[0] ^ folded[1] ^ folded[2] ^ folded[3]);
}

// ---- DRAM and L2 -----------------------------------------------------------------------------

constexpr int kLoadsInFlight = 4;

__device__ __forceinline__ uint4 load_cg(const uint4* p) {  // cached in L2 only
  uint4 v;
  asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// `vectors` is a multiple of gridDim.x * blockDim.x * kLoadsInFlight.
template <bool l2_only>
__global__ void read_kernel(const uint4* __restrict__ data, size_t vectors, long long passes, uint32_t* sink) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  uint32_t folded = 0;
  for (long long pass = 0; pass < passes; ++pass) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < vectors; i += stride * kLoadsInFlight) {
      uint4 v[kLoadsInFlight];
#pragma unroll
      for (int k = 0; k < kLoadsInFlight; ++k) v[k] = l2_only ? load_cg(data + i + k * stride) : __ldg(data + i + k * stride);
#pragma unroll
      for (int k = 0; k < kLoadsInFlight; ++k) folded ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    }
  }
  if (folded == 0x9e3779b9u) sink[0] = folded;  // keeps every load live; practically never stores
}

__global__ void write_kernel(uint4* __restrict__ data, size_t vectors, long long passes) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const uint32_t tag = blockIdx.x * blockDim.x + threadIdx.x;
  for (long long pass = 0; pass < passes; ++pass)
    for (size_t i = tag; i < vectors; i += stride) data[i] = make_uint4(tag, static_cast<uint32_t>(pass), 0u, 1u);
}

__global__ void copy_kernel(const uint4* __restrict__ source, uint4* __restrict__ target, size_t vectors, long long passes) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (long long pass = 0; pass < passes; ++pass) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < vectors; i += stride * kLoadsInFlight) {
      uint4 v[kLoadsInFlight];
#pragma unroll
      for (int k = 0; k < kLoadsInFlight; ++k) v[k] = __ldg(source + i + k * stride);
#pragma unroll
      for (int k = 0; k < kLoadsInFlight; ++k) target[i + k * stride] = v[k];
    }
  }
}

__global__ void empty_kernel() {}

// ---- Host side -------------------------------------------------------------------------------

struct Device {
  int index = 0;
  cudaDeviceProp prop{};
  pipeweave_tool::SmLimit sm_limit;  // --sms: the green context; inactive on the whole GPU
  int clock_khz = 0;
  int memory_clock_khz = 0;
  std::string driver;
  int driver_api = 0, runtime_api = 0;
  double dram_peak_gb_s() const { return 2.0 * memory_clock_khz * 1e3 * (prop.memoryBusWidth / 8.0) / 1e9; }
  bool hopper() const { return prop.major == 9 && prop.minor == 0; }
  int sm_count() const { return sm_limit.active() ? sm_limit.obtained : prop.multiProcessorCount; }  // the SMs kernels run on
  int cc() const { return prop.major * 10 + prop.minor; }
};

struct Run {
  double seconds;
  double clock_mhz;  // 0 where the kernel does not read the clock
};

struct Benchmark {
  std::string name;
  std::string instruction;  // what is measured, for the record
  std::string unit;         // flop, op, byte, launch
  double work_per_iteration = 0;
  long long first_iterations = 1;
  int clocked_ctas = 0;  // CTAs that write a CtaClock (0: none)
  std::function<void(long long iterations, CtaClock* clocks)> launch;
  // filled by measure()
  long long iterations = 0;
  std::vector<Run> runs;
};

struct Settings {
  bool quick = false;
  double target_seconds() const { return quick ? 0.004 : 0.025; }
  // Under a compute load the power controller lowers the clock over some hundreds of
  // milliseconds (seen on the H100: tf32 wgmma from 1710 to 1480 MHz within 0.25 s), so
  // compute benchmarks warm up for a second before the timed runs: the steady state is what
  // a busy serving GPU runs at.
  double warmup_seconds(bool clocked) const { return quick ? 0.02 : clocked ? 1.0 : 0.1; }
  int repetitions() const { return quick ? 3 : 10; }
};

class Timer {
 public:
  Timer() { PW_CHECK(cudaEventCreate(&start_)), PW_CHECK(cudaEventCreate(&stop_)); }
  ~Timer() { cudaEventDestroy(start_), cudaEventDestroy(stop_); }
  template <typename Body>
  double seconds(Body&& body) {
    PW_CHECK(cudaEventRecord(start_, g_stream));
    body();
    PW_CHECK(cudaEventRecord(stop_, g_stream));
    PW_CHECK(cudaEventSynchronize(stop_));
    PW_CHECK(cudaGetLastError());
    float ms = 0;
    PW_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3;
  }

 private:
  cudaEvent_t start_{}, stop_{};
};

void measure(Benchmark& bench, const Settings& settings, CtaClock* clocks_device, Timer& timer) {
  auto once = [&](long long iterations) { return timer.seconds([&] { bench.launch(iterations, clocks_device); }); };
  // Size the launch: grow until a run is long enough to scale from, then scale to the target.
  long long iterations = bench.first_iterations;
  double seconds = once(iterations);
  while (seconds < settings.target_seconds() / 16 && iterations < (1LL << 40)) seconds = once(iterations *= 8);
  iterations = std::max(1LL, static_cast<long long>(iterations * settings.target_seconds() / seconds));
  bench.iterations = iterations;

  for (double warm = 0; warm < settings.warmup_seconds(bench.clocked_ctas > 0);) warm += once(iterations);
  std::vector<CtaClock> clocks(bench.clocked_ctas);
  for (int i = 0; i < settings.repetitions(); ++i) {
    Run run{once(iterations), 0.0};
    if (bench.clocked_ctas > 0) {
      PW_CHECK(cudaMemcpy(clocks.data(), clocks_device, clocks.size() * sizeof(CtaClock), cudaMemcpyDeviceToHost));
      std::vector<double> mhz;
      for (const CtaClock& c : clocks)
        if (c.nanoseconds > 0) mhz.push_back(1e3 * static_cast<double>(c.cycles) / static_cast<double>(c.nanoseconds));
      if (!mhz.empty()) run.clock_mhz = median(mhz);
    }
    bench.runs.push_back(run);
  }
}

std::string human_rate(double per_second, const std::string& unit) {
  char text[64];
  if (unit == "launch") std::snprintf(text, sizeof text, "%.2f us per launch", 1e6 / per_second);
  else if (unit == "byte") std::snprintf(text, sizeof text, "%.0f GB/s", per_second / 1e9);
  else if (unit == "flop") std::snprintf(text, sizeof text, "%.1f TFLOP/s", per_second / 1e12);
  else std::snprintf(text, sizeof text, "%.1f G%s/s", per_second / 1e9, unit.c_str());
  return text;
}

struct Buffers {
  uint4* a = nullptr;
  uint4* b = nullptr;
  size_t vectors = 0;  // of each
  float* sink = nullptr;
  CtaClock* clocks = nullptr;
};

std::vector<Benchmark> make_benchmarks(const Device& device, Buffers& buffers) {
  const cudaDeviceProp& prop = device.prop;
  const int sms = device.sm_count();
  // More than half the SM's shared memory: one CTA per SM.
  const int one_per_sm_smem = static_cast<int>(prop.sharedMemPerMultiprocessor / 2 + 1024);
  float* sink = buffers.sink;
  std::vector<Benchmark> list;

  auto tensor_wgmma = [&](const char* name, const char* instruction, double flops_per_instruction, auto kernel) {
    PW_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, one_per_sm_smem));
    list.push_back(Benchmark{
        .name = name,
        .instruction = instruction,
        .unit = name == std::string("tensor_int8") ? "op" : "flop",
        .work_per_iteration = flops_per_instruction * kWgmmaPerGroup * kWgmmaWarpgroups * sms,
        .first_iterations = 64,
        .clocked_ctas = sms,
        .launch = [=](long long it, CtaClock* clocks) {
          kernel<<<sms, kWgmmaWarpgroups * 128, one_per_sm_smem, g_stream>>>(it, clocks, sink);
        }});
  };
  auto tensor_mma = [&](const char* name, const char* instruction, double flops_per_instruction, auto kernel) {
    PW_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, one_per_sm_smem));
    list.push_back(Benchmark{
        .name = name,
        .instruction = instruction,
        .unit = std::string(name).find("int8") != std::string::npos ? "op" : "flop",
        .work_per_iteration = flops_per_instruction * kMmaChains * (1024 / 32) * sms,
        .first_iterations = 64,
        .clocked_ctas = sms,
        .launch = [=](long long it, CtaClock* clocks) {
          kernel<<<sms, 1024, one_per_sm_smem, g_stream>>>(it, clocks, sink);
        }});
  };

  using K = TensorKind;
  if (device.hopper()) {
    tensor_wgmma("tensor_bf16", "wgmma.mma_async m64n256k16 f32.bf16.bf16, A and B in shared memory",
                 wgmma_flops<K::bf16>(), wgmma_kernel<K::bf16>);
    tensor_wgmma("tensor_fp8", "wgmma.mma_async m64n256k32 f32.e4m3.e4m3, A and B in shared memory",
                 wgmma_flops<K::fp8>(), wgmma_kernel<K::fp8>);
    tensor_wgmma("tensor_tf32", "wgmma.mma_async m64n256k8 f32.tf32.tf32, A and B in shared memory",
                 wgmma_flops<K::tf32>(), wgmma_kernel<K::tf32>);
    tensor_wgmma("tensor_int8", "wgmma.mma_async m64n256k32 s32.s8.s8, A and B in shared memory",
                 wgmma_flops<K::int8>(), wgmma_kernel<K::int8>);
    tensor_mma("tensor_bf16_mma_sync", "mma.sync m16n8k16 f32.bf16.bf16 (the FlashAttention-2 path on Hopper)",
               mma_sync_flops<K::bf16>(), mma_sync_kernel<K::bf16>);
  } else {
    const std::string jit = device.cc() > 90 ? " (no native path for this architecture here: PTX compiled by the driver)" : "";
    tensor_mma("tensor_bf16", ("mma.sync m16n8k16 f32.bf16.bf16" + jit).c_str(), mma_sync_flops<K::bf16>(),
               mma_sync_kernel<K::bf16>);
    if (device.cc() >= 89)
      tensor_mma("tensor_fp8", ("mma.sync m16n8k32 f32.e4m3.e4m3" + jit).c_str(), mma_sync_flops<K::fp8>(),
                 mma_sync_kernel<K::fp8>);
    tensor_mma("tensor_tf32", ("mma.sync m16n8k8 f32.tf32.tf32" + jit).c_str(), mma_sync_flops<K::tf32>(),
               mma_sync_kernel<K::tf32>);
    tensor_mma("tensor_int8", ("mma.sync m16n8k32 s32.s8.s8" + jit).c_str(), mma_sync_flops<K::int8>(),
               mma_sync_kernel<K::int8>);
  }

  PW_CHECK(cudaFuncSetAttribute(ffma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, one_per_sm_smem));
  list.push_back(Benchmark{
      .name = "fp32_fma", .instruction = "FFMA, 8 independent chains per thread, 1024 threads per SM",
      .unit = "op", .work_per_iteration = double(kUnroll) * kChains * 1024 * sms, .first_iterations = 16,
      .clocked_ctas = sms,
      .launch = [=](long long it, CtaClock* clocks) {
        ffma_kernel<<<sms, 1024, one_per_sm_smem, g_stream>>>(it, 0.999f, 1e-3f, clocks, sink);
      }});
  PW_CHECK(cudaFuncSetAttribute(ex2_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, one_per_sm_smem));
  list.push_back(Benchmark{
      .name = "xu_ex2", .instruction = "MUFU.EX2 (ex2.approx.ftz.f32), 8 independent chains per thread",
      .unit = "op", .work_per_iteration = double(kUnroll) * kChains * 1024 * sms, .first_iterations = 4,
      .clocked_ctas = sms,
      .launch = [=](long long it, CtaClock* clocks) {
        ex2_kernel<<<sms, 1024, one_per_sm_smem, g_stream>>>(it, clocks, sink);
      }});
  const int smem_bytes = std::max(one_per_sm_smem, kSmemRows * 1024 * 16);
  PW_CHECK(cudaFuncSetAttribute(smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
  list.push_back(Benchmark{
      .name = "smem_read", .instruction = "ld.shared.v4 (LDS.128), consecutive threads at consecutive 16 bytes",
      .unit = "byte", .work_per_iteration = 4.0 * kSmemRows * 16 * 1024 * sms, .first_iterations = 16,
      .clocked_ctas = sms,
      .launch = [=](long long it, CtaClock* clocks) { smem_kernel<<<sms, 1024, smem_bytes, g_stream>>>(it, clocks, sink); }});

  // Memory: a full GPU of resident threads, grid-stride loops.
  const int threads = 256;
  const int ctas = sms * (prop.maxThreadsPerMultiProcessor / threads);
  const size_t chunk = static_cast<size_t>(ctas) * threads * kLoadsInFlight;
  const size_t vectors = buffers.vectors / chunk * chunk;
  const uint4* a = buffers.a;
  uint4* b = buffers.b;
  uint32_t* sink_words = reinterpret_cast<uint32_t*>(sink);
  list.push_back(Benchmark{
      .name = "dram_read", .instruction = "ld.global.nc.v4 over 2 GiB, 4 loads in flight per thread",
      .unit = "byte", .work_per_iteration = double(vectors) * 16, .first_iterations = 1,
      .launch = [=](long long it, CtaClock*) {
        read_kernel<false><<<ctas, threads, 0, g_stream>>>(a, vectors, it, sink_words);
      }});
  list.push_back(Benchmark{
      .name = "dram_write", .instruction = "st.global.v4 over 2 GiB",
      .unit = "byte", .work_per_iteration = double(vectors) * 16, .first_iterations = 1,
      .launch = [=](long long it, CtaClock*) { write_kernel<<<ctas, threads, 0, g_stream>>>(b, vectors, it); }});
  list.push_back(Benchmark{
      .name = "dram_copy", .instruction = "ld.global.nc.v4 + st.global.v4, 2 GiB to 2 GiB (bytes read + written)",
      .unit = "byte", .work_per_iteration = 2.0 * double(vectors) * 16, .first_iterations = 1,
      .launch = [=](long long it, CtaClock*) { copy_kernel<<<ctas, threads, 0, g_stream>>>(a, b, vectors, it); }});
  // L2: at most a quarter of it, so that the lines stay resident whichever partition holds
  // them; 1024 threads per SM, whose 64 KB of loads in flight cover the L2's latency.
  const int l2_ctas = sms * 4;
  const size_t l2_chunk = static_cast<size_t>(l2_ctas) * threads * kLoadsInFlight;
  const size_t l2_vectors = std::max<size_t>(1, static_cast<size_t>(prop.l2CacheSize) / 4 / 16 / l2_chunk) * l2_chunk;
  list.push_back(Benchmark{
      .name = "l2_read",
      .instruction = "ld.global.cg.v4 over " + std::to_string(l2_vectors * 16 >> 20) + " MiB (L2-resident), repeated",
      .unit = "byte", .work_per_iteration = double(l2_vectors) * 16, .first_iterations = 16,
      .launch = [=](long long it, CtaClock*) {
        read_kernel<true><<<l2_ctas, threads, 0, g_stream>>>(a, l2_vectors, it, sink_words);
      }});
  list.push_back(Benchmark{
      .name = "launch_overhead", .instruction = "empty kernel <<<1, 32>>>, launched back to back",
      .unit = "launch", .work_per_iteration = 1, .first_iterations = 256,
      .launch = [](long long it, CtaClock*) {
        for (long long i = 0; i < it; ++i) empty_kernel<<<1, 32, 0, g_stream>>>();
      }});
  return list;
}

void print_json(std::FILE* out, const Device& device, const Settings& settings, const std::vector<Benchmark>& done) {
  const cudaDeviceProp& p = device.prop;
  std::fprintf(out, "{\n  \"format\": \"pipeweave-microbench\",\n  \"version\": 1,\n  \"quick\": %s,\n",
              settings.quick ? "true" : "false");
  std::fprintf(out, "  \"device\": {\"name\": %s, \"compute_capability\": \"%d.%d\", \"sm_count\": %d, "
              "\"max_clock_mhz\": %.0f, \"memory_clock_mhz\": %.0f, \"memory_bus_bits\": %d, "
              "\"dram_peak_gb_s\": %.1f, \"l2_bytes\": %d, \"memory_bytes\": %zu, \"smem_bytes_per_sm\": %zu, "
              "\"registers_per_sm\": %d, \"max_threads_per_sm\": %d, \"max_ctas_per_sm\": %d, "
              "\"driver\": %s, \"cuda_driver_api\": %d, \"cuda_runtime\": %d%s},\n",
              json_string(p.name).c_str(), p.major, p.minor, device.sm_count(), device.clock_khz / 1e3,
              device.memory_clock_khz / 1e3, p.memoryBusWidth, device.dram_peak_gb_s(), p.l2CacheSize,
              p.totalGlobalMem, p.sharedMemPerMultiprocessor, p.regsPerMultiprocessor, p.maxThreadsPerMultiProcessor,
              p.maxBlocksPerMultiProcessor, json_string(device.driver).c_str(), device.driver_api, device.runtime_api,
              pipeweave_tool::sm_limit_json(device.sm_limit).c_str());
  std::fprintf(out, "  \"benchmarks\": [");
  for (size_t i = 0; i < done.size(); ++i) {
    const Benchmark& b = done[i];
    std::fprintf(out, "%s\n    {\"name\": %s, \"instruction\": %s, \"unit\": \"%s\", \"iterations\": %lld, \"work\": %.17g, \"runs\": [",
                i ? "," : "", json_string(b.name).c_str(), json_string(b.instruction).c_str(), b.unit.c_str(),
                b.iterations, b.work_per_iteration * b.iterations);
    for (size_t r = 0; r < b.runs.size(); ++r)
      std::fprintf(out, "%s{\"seconds\": %.9g, \"clock_mhz\": %.1f}", r ? ", " : "", b.runs[r].seconds, b.runs[r].clock_mhz);
    std::fprintf(out, "]}");
  }
  std::fprintf(out, "\n  ]\n}\n");
}

constexpr const char* kUsage =
    "usage: pipeweave-microbench [--quick] [--only NAME[,NAME...]] [--device N] [--sms N] [--out FILE] [--list]\n"
    "Measures the GPU's pipeline throughputs; prints JSON (pipeweave-microbench v1) on stdout.\n"
    "--sms N runs every kernel on N of the GPU's SMs (a green context; rounded up to the hardware's granularity).\n";

// ---- Command line and phases ---------------------------------------------------------------------

struct Options {
  Settings settings;
  std::vector<std::string> only;  // --only's names; empty: every benchmark
  bool list_only = false;
  int device_index = 0;
  int sms = 0;  // --sms N; 0: the whole GPU
  std::string out_path;  // empty: stdout
};

// Takes the value of --only, --device, --out or --sms.
void set_option(Options& options, const std::string& argument, const std::string& value) {
  if (argument == "--sms") {
    options.sms = pipeweave_tool::parse_sms(kToolName, value);
  } else if (argument == "--out") {
    options.out_path = value;
  } else if (argument == "--device") {
    options.device_index = std::atoi(value.c_str());
  } else {
    std::stringstream names(value);
    for (std::string name; std::getline(names, name, ',');) options.only.push_back(name);
  }
}

// The command line's options; --help prints the usage and ends the program, as an unknown
// argument does with exit status 2.
Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument == "--quick") options.settings.quick = true;
    else if (argument == "--list") options.list_only = true;
    else if ((argument == "--only" || argument == "--device" || argument == "--out" || argument == "--sms") && i + 1 < argc) {
      set_option(options, argument, argv[++i]);
    } else if (argument == "--help" || argument == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else {
      std::fprintf(stderr, "pipeweave-microbench: error: unknown argument %s\n%s", argument.c_str(), kUsage);
      std::exit(2);
    }
  }
  return options;
}

// GPU `device_index` as the runtime reports it; fails unless it exists and is Ampere or later.
Device open_device(int device_index) {
  const int count = pipeweave_tool::visible_gpu_count(kToolName);
  if (device_index < 0 || device_index >= count)
    fail("--device " + std::to_string(device_index) + " is out of range: " + std::to_string(count) + " GPU(s) visible");
  Device device;
  device.index = device_index;
  PW_CHECK(cudaSetDevice(device_index));
  PW_CHECK(cudaGetDeviceProperties(&device.prop, device_index));
  PW_CHECK(cudaDeviceGetAttribute(&device.clock_khz, cudaDevAttrClockRate, device_index));
  PW_CHECK(cudaDeviceGetAttribute(&device.memory_clock_khz, cudaDevAttrMemoryClockRate, device_index));
  PW_CHECK(cudaDriverGetVersion(&device.driver_api));
  PW_CHECK(cudaRuntimeGetVersion(&device.runtime_api));
  device.driver = driver_version();
  if (device.cc() < 80)
    fail(std::string(device.prop.name) + " has compute capability " + std::to_string(device.prop.major) + "." +
         std::to_string(device.prop.minor) + "; the microbenchmarks need 8.0 (Ampere) or later");
  return device;
}

// The benchmarks' buffers, allocated (in the green context, if one is current) unless only the
// list is wanted; their size is set either way (make_benchmarks sizes the DRAM launches by it).
Buffers allocate_buffers(const Device& device, bool list_only) {
  Buffers buffers;
  constexpr size_t kBufferBytes = size_t{2} << 30;
  buffers.vectors = kBufferBytes / sizeof(uint4);
  if (list_only) return buffers;
  PW_CHECK(cudaMalloc(&buffers.a, kBufferBytes));
  PW_CHECK(cudaMalloc(&buffers.b, kBufferBytes));
  PW_CHECK(cudaMemset(buffers.a, 0x5a, kBufferBytes));
  PW_CHECK(cudaMalloc(&buffers.sink, sizeof(float) * 1024 * device.prop.multiProcessorCount));
  PW_CHECK(cudaMalloc(&buffers.clocks, sizeof(CtaClock) * device.prop.multiProcessorCount));
  // The memset ran on the legacy default stream, which the green context's stream does not wait for.
  if (device.sm_limit.active()) PW_CHECK(cudaDeviceSynchronize());
  return buffers;
}

// The benchmarks --only names (all without it), in their usual order; fails on a name none has.
std::vector<Benchmark> choose(std::vector<Benchmark> all, const std::vector<std::string>& only) {
  for (const std::string& name : only)
    if (std::none_of(all.begin(), all.end(), [&](const Benchmark& b) { return b.name == name; }))
      fail("--only names no benchmark \"" + name + "\" on this GPU (see --list)");
  std::vector<Benchmark> chosen;
  for (Benchmark& b : all)
    if (only.empty() || std::find(only.begin(), only.end(), b.name) != only.end()) chosen.push_back(std::move(b));
  return chosen;
}

// Measures each benchmark in turn, saying on stderr what each achieved.
void run_benchmarks(std::vector<Benchmark>& chosen, const Settings& settings, const Buffers& buffers) {
  Timer timer;
  for (size_t i = 0; i < chosen.size(); ++i) {
    Benchmark& b = chosen[i];
    std::fprintf(stderr, "[%2zu/%zu] %-22s ", i + 1, chosen.size(), b.name.c_str());
    std::fflush(stderr);
    measure(b, settings, buffers.clocks, timer);
    std::vector<double> seconds, clocks;
    for (const Run& r : b.runs) seconds.push_back(r.seconds), clocks.push_back(r.clock_mhz);
    const double t = median(seconds);
    std::fprintf(stderr, "%-22s %8.3f ms per run", human_rate(b.work_per_iteration * b.iterations / t, b.unit).c_str(),
                 t * 1e3);
    if (b.clocked_ctas > 0) std::fprintf(stderr, ", SM clock %.0f MHz", median(clocks));
    std::fprintf(stderr, "\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  Device device = open_device(options.device_index);
  // Before any allocation: the green context is current from here on.
  if (options.sms > 0 && !options.list_only) {
    device.sm_limit = pipeweave_tool::confine_to_sms(kToolName, options.device_index, options.sms);
    g_stream = device.sm_limit.stream;
  }
  Buffers buffers = allocate_buffers(device, options.list_only);
  std::vector<Benchmark> all = make_benchmarks(device, buffers);
  if (options.list_only) {
    for (const Benchmark& b : all) std::printf("%-22s %s\n", b.name.c_str(), b.instruction.c_str());
    return 0;
  }
  std::vector<Benchmark> chosen = choose(std::move(all), options.only);

  std::fprintf(stderr, "pipeweave-microbench: %s (sm_%d%d, %d SMs), %zu benchmarks%s\n", device.prop.name,
               device.prop.major, device.prop.minor, device.prop.multiProcessorCount, chosen.size(),
               options.settings.quick ? ", quick" : "");
  if (device.sm_limit.active())
    std::fprintf(stderr, "pipeweave-microbench: confined to %d of %d SMs (--sms %d; a probe kernel ran on %d)\n",
                 device.sm_limit.obtained, device.sm_limit.device_sm_count, options.sms, device.sm_limit.observed);
  run_benchmarks(chosen, options.settings, buffers);
  std::FILE* out = options.out_path.empty() ? stdout : std::fopen(options.out_path.c_str(), "w");
  if (!out) fail("cannot write " + options.out_path);
  print_json(out, device, options.settings, chosen);
  if (out != stdout && std::fclose(out) != 0) fail("cannot write " + options.out_path);
  cudaFree(buffers.a), cudaFree(buffers.b), cudaFree(buffers.sink), cudaFree(buffers.clocks);
  return 0;
}
