import json
import subprocess

import pytest

import pipeweave as pw


def test_a_workload_from_file_dict_and_json(repo, predictor, h100):
    path = repo / "data/e2e/workload_llama8b_48.json"
    workload = pw.Workload.from_file(path)
    assert len(workload) > 0 and workload.model == "Llama-3.1-8B" and workload.tp_size == 1 and workload.dtype == "bf16"
    assert len(pw.Workload.from_dict(workload.to_dict())) == len(workload)
    assert len(pw.Workload.from_json(workload.to_json())) == len(workload)
    by_object = predictor.predict_workload(workload, h100)
    by_path = predictor.predict_workload(str(path), h100)
    by_dict = predictor.predict_workload(json.loads(path.read_text()), h100)
    assert by_object.total_us == by_path.total_us == by_dict.total_us > 0
    assert by_object.engine == "sglang" and by_object.to_dict()["iterations"][0]["iteration"] == 0
    assert 0 < by_object.time_to_first_token_us["median"] <= by_object.time_to_first_token_us["p90"]


def test_the_same_serving_run_as_the_cli(repo, predictor, h100, cli):
    path = repo / "data/e2e/workload_llama8b_48.json"
    output = subprocess.run([cli, "e2e", "--gpu", "H100-SXM", "--workload", str(path), "--engine", "vllm", "--json"],
                            check=True, capture_output=True, text=True).stdout
    expected = json.loads(output)
    got = predictor.predict_workload(str(path), h100, engine="vllm")
    assert got.total_us == pytest.approx(expected["total_us"], rel=1e-12)
    # the GEMMs come without configs: the bundled networks for them answer from served rows
    assert got.served_us == pytest.approx(expected["served_us"], rel=1e-12)
    assert 0 < got.served_us < got.total_us
    assert got.to_dict()["served_us"] == got.served_us
    # the sustained-load terms, as the CLI's --json names them
    for key in ("sustained_slowdown", "sustained_utilization", "served_label_slowdown"):
        assert got.to_dict()[key] == pytest.approx(expected[key], rel=1e-12), key
    assert got.sustained_slowdown == expected["sustained_slowdown"] > 1
    assert 1 < got.served_label_slowdown == expected["served_label_slowdown"] < got.sustained_slowdown


def test_a_workload_generated_from_a_config_and_a_trace(repo, predictor, h100):
    config = repo / "data/e2e/Llama-3.1-8B/config.json"
    trace = repo / "data/e2e/trace_48.csv"
    from_files = pw.Workload.generate(config, trace, tp=2)
    rows = [line.split(",") for line in trace.read_text().splitlines()[1:]]
    from_rows = pw.Workload.generate(json.loads(config.read_text()), [(int(p), int(d)) for p, d, _ in rows], tp=2)
    assert from_files.tp_size == 2 and len(from_files) == len(from_rows) > 0
    assert predictor.predict_workload(from_files, h100).total_us == predictor.predict_workload(from_rows, h100).total_us
    with pytest.raises(pw.Error, match="num_prefill_tokens"):
        pw.Workload.generate(config, [(-5, 3)])
    with pytest.raises(pw.Error):
        pw.Workload.generate(config, trace, tp=3)  # 32 heads do not split over 3 GPUs
    with pytest.raises(pw.Error, match="engine"):
        predictor.predict_workload(from_files, h100, engine="tensorrt")


def test_a_trace_predicted_as_it_is_scheduled(repo, predictor, h100):
    config = repo / "data/e2e/Llama-3.1-8B/config.json"
    # long enough for three blocks of 4,096 iterations, one sequence at a time
    trace = [(40 + (i * 53) % 300, 60 + (i * 37) % 90) for i in range(120)]
    whole = pw.Workload.generate(config, trace, max_sequences=1, attention_impl="flash2", model="llama")
    assert len(whole) > 2 * 4096
    expected = predictor.predict_workload(whole, h100, engine="vllm").to_dict()
    for threads in (1, 2, 0):
        got = predictor.predict_trace(config, trace, h100, max_sequences=1, attention_impl="flash2", model="llama",
                                      engine="vllm", threads=threads)
        assert got.to_dict() == expected, threads
    with pytest.raises(pw.Error, match="num_prefill_tokens"):
        predictor.predict_trace(config, [(-5, 3)], h100)
    with pytest.raises(pw.Error, match="options.threads"):
        predictor.predict_trace(config, trace, h100, threads=-1)


def test_a_mixture_of_experts_expert_parallel(repo, predictor, h100):
    config = repo / "tests/data/models/Mixtral-8x7B/config.json"
    trace = repo / "tests/data/trace_small.csv"
    sliced = pw.Workload.generate(config, trace, tp=2)
    whole_experts = pw.Workload.generate(config, trace, tp=2, expert_parallel=True)
    moe = whole_experts.to_dict()["iterations"][0]["operators"]["moe"]
    assert moe["ep"] == 2 and moe["intermediate"] == 14336  # four whole experts a rank
    assert "ep" not in sliced.to_dict()["iterations"][0]["operators"]["moe"]
    assert (predictor.predict_trace(config, trace, h100, tp=2, expert_parallel=True).total_us ==
            predictor.predict_workload(whole_experts, h100).total_us != predictor.predict_workload(sliced, h100).total_us)
    with pytest.raises(pw.Error, match="needs a mixture-of-experts model"):
        pw.Workload.generate(repo / "data/e2e/Llama-3.1-8B/config.json", trace, tp=2, expert_parallel=True)
