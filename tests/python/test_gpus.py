import json

import pytest

import pipeweave as pw


def test_catalog_lists_the_gpus_by_name():
    names = [gpu.name for gpu in pw.catalog()]
    assert "H100-SXM" in names and "H200-SXM" in names and "A100-SXM4-80GB" in names
    assert len(names) == len(set(names))


def test_a_gpu_by_catalog_name_by_device_name_and_from_its_file(repo, h100):
    assert h100.name == "H100-SXM" and h100.architecture == "hopper" and h100.compute_capability == (9, 0)
    assert pw.GpuSpec("NVIDIA H100 80GB HBM3") == h100
    from_file = pw.GpuSpec.from_file(repo / "data/gpus/H100-SXM.calibrated.json")
    assert from_file.sm_count == 132 and from_file.name == "H100-SXM"
    assert pw.GpuSpec(str(repo / "data/gpus/H100-SXM.calibrated.json")) == from_file


def test_dict_and_json_round_trip(h100):
    spec = h100.to_dict()
    assert spec["sm_count"] == h100.sm_count
    assert pw.GpuSpec.from_dict(spec) == h100
    assert pw.GpuSpec.from_json(h100.to_json()) == h100
    # A what-if: the same GPU with twice the memory bandwidth is a different, valid spec.
    spec["dram_bandwidth_gb_s"] = 2 * h100.dram_bandwidth_gb_s
    assert pw.GpuSpec.from_dict(spec).dram_bandwidth_gb_s == pytest.approx(2 * h100.dram_bandwidth_gb_s)


def test_bad_gpus_raise_the_library_message(h100):
    with pytest.raises(pw.Error, match='unknown GPU "no-such-gpu"'):
        pw.GpuSpec("no-such-gpu")
    spec = h100.to_dict()
    spec["sm_count"] = -1
    with pytest.raises(ValueError, match="sm_count"):
        pw.GpuSpec.from_dict(spec)
    with pytest.raises(pw.Error):
        pw.GpuSpec.from_json("{not json")
    with pytest.raises(pw.Error):
        pw.GpuSpec.from_file("/no/such/spec.json")


def test_a_gpu_name_is_accepted_where_a_spec_is(predictor, h100):
    gemm = pw.Gemm(m=256, n=4096, k=4096)
    assert predictor.predict(gemm, "H100-SXM").latency_us == predictor.predict(gemm, h100).latency_us
    assert json.loads(h100.to_json())["name"] == "H100-SXM"
