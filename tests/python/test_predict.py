import json
import subprocess
import threading

import numpy as np
import pytest

import pipeweave as pw
from test_ops import OPS


def test_a_prediction_is_its_bound_over_its_efficiency(predictor, h100):
    p = predictor.predict(pw.Gemm(m=4096, n=4096, k=4096), h100)
    assert p.source == "trained_model" and p.bottleneck == "tensor" and p.config_defaulted
    # the bundled networks for GEMMs without a config learnt from GEMMs timed as served; given its
    # config, the GEMM model (rows timed alone after a rest) answers
    assert p.protocol == "served" and p.to_dict()["protocol"] == "served"
    assert predictor.predict(predictor.configured(pw.Gemm(m=4096, n=4096, k=4096), h100), h100).protocol == "rested"
    assert 0 < p.efficiency <= 1 and p.latency_us == pytest.approx(p.lower_bound_us / p.efficiency)
    assert p.to_dict()["latency_us"] == p.latency_us
    assert 0 < p.tensor_us <= p.lower_bound_us and p.to_dict()["tensor_us"] == p.tensor_us
    assert pw.Predictor.analytical().predict(pw.Gemm(m=4096, n=4096, k=4096), h100).source == "analytical_bound"


def test_the_same_figures_as_the_cli(predictor, h100, cli):
    """Python and the C++ CLI are one library: every op family predicts the same."""
    kernels = [str(op) for op in OPS]
    output = subprocess.run([cli, "predict", "--gpu", "H100-SXM", "--json", *kernels], check=True, capture_output=True,
                            text=True).stdout
    expected = json.loads(output)["predictions"]
    for op, cli_row in zip(OPS, expected):
        p = predictor.predict(op, h100)
        assert p.latency_us == pytest.approx(cli_row["latency_us"], rel=1e-12), str(op)
        assert (p.bottleneck, p.source, p.protocol, p.config_defaulted) == (
            cli_row["bottleneck"], cli_row["source"], cli_row["protocol"], cli_row["config_defaulted"])


def test_a_list_predicts_as_its_kernels_one_by_one(predictor, h100):
    batch = predictor.predict(OPS, h100)
    assert [p.latency_us for p in batch] == [predictor.predict(op, h100).latency_us for op in OPS]


def test_numpy_batches_match_the_list(predictor, h100):
    m = np.array([1, 16, 100, 1000, 4096], dtype=np.int64)
    n = np.full(5, 4096)
    k = np.array([4096, 4096, 14336, 4096, 1024], dtype=np.int32)  # other integer types are converted
    latencies = predictor.predict_gemms(m, n, k, h100, dtype="fp8_e4m3")
    assert latencies.dtype == np.float64 and latencies.shape == (5,)
    expected = [predictor.predict(pw.Gemm(m=int(a), n=int(b), k=int(c), dtype="fp8_e4m3"), h100).latency_us
                for a, b, c in zip(m, n, k)]
    assert latencies.tolist() == expected
    rows = predictor.predict_rows("silu_mul", m, np.full(5, 14336), h100)
    assert rows.tolist() == [predictor.predict(pw.SiluMul(tokens=int(t), dim=14336), h100).latency_us for t in m]
    norms = predictor.predict_rows("rmsnorm", m, np.full(5, 4096), h100)
    assert norms.tolist() == [predictor.predict(pw.RmsNorm(tokens=int(t), hidden=4096, fused_residual=True), h100).latency_us
                              for t in m]


def test_numpy_batches_refuse_bad_columns(predictor, h100):
    with pytest.raises(pw.Error, match="n has 1 entries"):
        predictor.predict_gemms(np.array([1, 2]), np.array([1]), np.array([1, 2]), h100)
    with pytest.raises(pw.Error, match="gemm.m"):
        predictor.predict_gemms(np.array([1, -2]), np.array([1, 1]), np.array([1, 2]), h100)
    with pytest.raises(pw.Error, match="family"):
        predictor.predict_rows("gemm", np.array([1]), np.array([1]), h100)


def test_rank_and_the_best_config(predictor, h100):
    shape = pw.Gemm(m=64, n=4096, k=4096)
    configs = pw.gemm_candidates(shape, h100)
    assert len(configs) > 50
    candidates = [pw.Gemm(m=64, n=4096, k=4096, config=c) for c in configs]
    ranked = predictor.rank(candidates, h100)
    latencies = [r.prediction.latency_us for r in ranked]
    assert latencies == sorted(latencies) and sorted(r.index for r in ranked) == list(range(len(candidates)))
    best = predictor.best_gemm_config(shape, h100)
    assert best == configs[ranked[0].index]
    assert predictor.full_search_gemm_config(shape, h100) == best  # m = 64: on the grid, a full search
    off_grid = pw.Gemm(m=70, n=4096, k=4096)
    assert predictor.best_gemm_config(off_grid, h100) in pw.gemm_candidates(off_grid, h100)
    assert predictor.configured(shape, h100) == pw.Gemm(m=64, n=4096, k=4096, config=best)
    assert pw.default_gemm_config(shape, h100).tile_m > 0


def test_model_files(repo, h100):
    gemm = pw.Gemm(m=512, n=4096, k=4096, config=pw.default_gemm_config(pw.Gemm(m=512, n=4096, k=4096), h100))
    bundled = pw.Predictor().predict(gemm, h100).latency_us
    assert pw.Predictor(models=[repo / "data/models/gemm.json"]).predict(gemm, h100).latency_us == bundled
    alone = pw.Predictor(models=[str(repo / "data/models/rmsnorm.json")], bundled=False)
    assert alone.predict(gemm, h100).source == "analytical_bound"
    with pytest.raises(pw.Error):
        pw.Predictor(models=["/no/such/model.json"])


def test_threads_share_one_predictor(h100):
    """Eight threads on one predictor (its config memo filling at once): the answers of one thread."""
    shapes = [pw.Gemm(m=m, n=n, k=4096) for m in range(1, 400, 7) for n in (1024, 4096, 6144)]
    expected = [p.latency_us for p in pw.Predictor().predict(shapes, h100)]
    shared = pw.Predictor()
    results, errors = [None] * 8, []

    def work(t):
        try:
            order = shapes[t:] + shapes[:t]
            got = [shared.predict(op, h100).latency_us for op in order] if t % 2 else \
                [p.latency_us for p in shared.predict(order, h100)]
            results[t] = got[len(shapes) - t:] + got[:len(shapes) - t]
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert all(r == expected for r in results)


def test_fused_moe_configs(predictor, h100):
    shape = pw.FusedMoe(tokens=256, experts=8, top_k=2, hidden=4096, intermediate=7168)
    configs = pw.fused_moe_candidates(shape, h100)
    assert len(configs) > 1000 and configs[-1] == pw.default_fused_moe_config(shape, h100)
    assert configs[-1] == pw.FusedMoeConfig(block_m=64, block_n=64, block_k=32, stages=3, group_m=8, warps=4)
    kernels = [pw.FusedMoe(tokens=256, experts=8, top_k=2, hidden=4096, intermediate=7168, config=c) for c in configs[::40]]
    ranked = predictor.rank(kernels, h100)
    assert [r.prediction.latency_us for r in ranked] == sorted(r.prediction.latency_us for r in ranked)
    # Without a config the prediction is vLLM's default config's.
    assert predictor.predict(shape, h100).latency_us == predictor.predict(
        pw.FusedMoe(tokens=256, experts=8, top_k=2, hidden=4096, intermediate=7168, config=configs[-1]), h100).latency_us
    with pytest.raises(pw.Error, match="fused_moe.block_m must be a power of two"):
        pw.FusedMoeConfig(block_m=48, block_n=64, block_k=64)
    # Skewed routing: a few tokens touch fewer experts, so fewer weights are read (the same kernel
    # string round trip keeps the skew).
    few, skewed = (pw.FusedMoe(tokens=8, experts=64, top_k=6, hidden=2048, intermediate=1408, zipf=z) for z in (0, 1.2))
    assert skewed.zipf == 1.2 and pw.parse_kernel(str(skewed)) == skewed
    assert predictor.predict(skewed, h100).lower_bound_us < predictor.predict(few, h100).lower_bound_us
    # Expert parallelism: one rank of eight computes an eighth of the experts' blocks.
    rank = pw.FusedMoe(tokens=4096, experts=64, top_k=6, hidden=2048, intermediate=1408, expert_parallel=8)
    assert rank.expert_parallel == 8 and pw.parse_kernel(str(rank)) == rank and "ep=8" in str(rank)
    whole = pw.FusedMoe(tokens=4096, experts=64, top_k=6, hidden=2048, intermediate=1408)
    assert predictor.predict(rank, h100).latency_us < predictor.predict(whole, h100).latency_us / 2
    with pytest.raises(pw.Error, match="fused_moe.ep must divide"):
        pw.FusedMoe(tokens=8, experts=64, top_k=6, hidden=2048, intermediate=1408, expert_parallel=3)
