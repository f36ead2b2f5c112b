"""pipeweave: predicts how long a GPU kernel, or a whole LLM serving run, takes on a given
NVIDIA GPU without running it.

    import pipeweave as pw
    predictor = pw.Predictor()                 # the bundled models; thread-safe, make it once
    gpu = pw.GpuSpec("H100-SXM")               # a catalog name, a CUDA device name or a spec file
    p = predictor.predict(pw.Gemm(m=4096, n=4096, k=4096, dtype="bf16"), gpu)
    print(p.latency_us, p.bottleneck, p.to_dict())

Bad input raises pipeweave.InvalidInput (a ValueError) with the library's message, naming the
field and the value; every error the library raises is a pipeweave.Error (a file that cannot be
read, a training run that diverged: a RuntimeError).
"""

from ._core import (
    Attention,
    AttentionConfig,
    Collective,
    Elementwise,
    Error,
    FusedMoe,
    FusedMoeConfig,
    Gemm,
    GemmConfig,
    GpuSpec,
    InvalidInput,
    Kernel,
    Prediction,
    Predictor,
    RankedCandidate,
    RmsNorm,
    SiluMul,
    Workload,
    WorkloadPrediction,
    __version__,
    catalog,
    default_fused_moe_config,
    default_gemm_config,
    default_gpu,
    dtypes,
    fused_moe_candidates,
    gemm_candidates,
    parse_kernel,
)

__all__ = [
    "Attention",
    "AttentionConfig",
    "Collective",
    "Elementwise",
    "Error",
    "InvalidInput",
    "FusedMoe",
    "FusedMoeConfig",
    "Gemm",
    "GemmConfig",
    "GpuSpec",
    "Kernel",
    "Prediction",
    "Predictor",
    "RankedCandidate",
    "RmsNorm",
    "SiluMul",
    "Workload",
    "WorkloadPrediction",
    "__version__",
    "catalog",
    "default_fused_moe_config",
    "default_gemm_config",
    "default_gpu",
    "dtypes",
    "fused_moe_candidates",
    "gemm_candidates",
    "parse_kernel",
]
