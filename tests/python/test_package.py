"""What `pip install .` puts in place: the module, its type stubs and the examples that use it."""

import json
import pathlib
import subprocess
import sys

import pipeweave as pw


def test_the_package_carries_type_stubs():
    package = pathlib.Path(pw.__file__).parent
    stub = (package / "_core.pyi").read_text()
    assert (package / "py.typed").exists()
    for name in ("class Predictor", "def predict(", "def predict_gemms(", "class Gemm", "def parse_kernel("):
        assert name in stub
    assert pw.__version__.count(".") == 2


def run_example(repo, name, *args):
    return subprocess.run([sys.executable, str(repo / "examples/python" / name), *args], check=True, capture_output=True,
                          text=True).stdout


def test_example_scheduler_cost(repo, tmp_path):
    out = tmp_path / "choice.json"
    printed = run_example(repo, "scheduler_cost.py", "--budget-ms", "30", "--json", str(out))
    choice = json.loads(out.read_text())
    assert choice["admitted_decodes"] >= 16 and f"admit {choice['admitted_decodes']} decodes" in printed
    fits = [c for c in choice["candidates"] if c["fits"]]
    assert all(c["predicted_ms"] <= 30 for c in fits) and not choice["candidates"][-1]["fits"]


def test_example_autotune_gemm(repo, tmp_path):
    out = tmp_path / "ranked.csv"
    printed = run_example(repo, "autotune_gemm.py", "--m", "64", "--n", "4096", "--k", "4096", "--csv", str(out))
    rows = out.read_text().splitlines()[1:]
    latencies = [float(row.split(",")[-2]) for row in rows]
    assert len(rows) > 50 and latencies == sorted(latencies) and "predicted best" in printed


def test_example_compare_gpus(repo, tmp_path):
    out = tmp_path / "gpus.json"
    run_example(repo, "compare_gpus.py", "--config", str(repo / "data/e2e/Llama-3.1-8B/config.json"), "--trace",
                str(repo / "data/e2e/trace_48.csv"), "--gpus", "H100-SXM,H200-SXM,L40S", "--json", str(out))
    results = {r["gpu"]: r for r in json.loads(out.read_text())}
    assert set(results) == {"H100-SXM", "H200-SXM", "L40S"}
    assert results["H200-SXM"]["total_us"] < results["H100-SXM"]["total_us"] < results["L40S"]["total_us"]


def test_example_tune_fused_moe(repo, tmp_path):
    out = tmp_path / "E=8,N=7168.json"
    printed = run_example(repo, "tune_fused_moe.py", "--batches", "1,64,1024", "--out", str(out))
    table = json.loads(out.read_text())
    assert set(table) == {"1", "64", "1024"}
    assert all(set(config) == {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "num_stages"}
               for config in table.values())
    speedups = [float(line.split()[3]) for line in printed.splitlines()[2:5]]
    assert all(s >= 1 for s in speedups)  # the tuned pick is at least as fast as the default, as predicted
