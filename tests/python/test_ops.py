import pytest

import pipeweave as pw

OPS = [
    pw.Gemm(m=4096, n=4096, k=4096),
    pw.Gemm(m=64, n=4096, k=4096, dtype="fp8_e4m3",
            config=pw.GemmConfig(tile_m=64, tile_n=128, tile_k=128, stages=4, swap_ab=True, schedule="cooperative")),
    pw.Attention([512, 1, 1], [512, 4096, 900], heads=32, kv_heads=8, head_dim=128, page_size=16),
    pw.Attention.prefill(4, 2048, 32, 8, 128),
    pw.Attention.decode(16, 4096, 32, 8, 128, dtype="fp16"),
    pw.Attention([1024], heads=32, kv_heads=8, head_dim=128, config=pw.AttentionConfig(impl="flash2")),
    pw.RmsNorm(tokens=8192, hidden=4096, fused_residual=True),
    pw.SiluMul(tokens=8192, dim=14336),
    pw.FusedMoe(tokens=512, experts=8, top_k=2, hidden=4096, intermediate=14336),
    pw.Elementwise(bytes=1e9, flops=2.5e8),
    pw.Collective("all_reduce", bytes=16777216, ranks=8),
]


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.family)
def test_every_op_prints_as_the_kernel_string_that_parses_back(op):
    assert pw.parse_kernel(str(op)) == op
    assert repr(op) == f"parse_kernel('{op}')"
    assert str(pw.Kernel(op)) == str(op) and pw.Kernel(op).family == op.family == op.to_dict()["family"]


def test_fields_and_to_dict():
    gemm = OPS[1]
    assert (gemm.m, gemm.n, gemm.k, gemm.dtype) == (64, 4096, 4096, "fp8_e4m3")
    assert gemm.config.swap_ab and gemm.config.schedule == "cooperative" and gemm.config.split_k == 1
    assert gemm.to_dict()["config"]["tile_k"] == 128
    assert pw.Gemm(m=1, n=2, k=3).config is None and pw.Gemm(m=1, n=2, k=3).to_dict()["config"] is None
    attention = OPS[2]
    assert attention.q_lens == [512, 1, 1] and attention.kv_lens == [512, 4096, 900] and attention.page_size == 16
    assert pw.Attention([7], heads=8, kv_heads=8, head_dim=64).kv_lens == [7]  # default: a prefill
    assert OPS[8].to_dict() == {"family": "fused_moe", "tokens": 512, "experts": 8, "top_k": 2, "hidden": 4096,
                                "intermediate": 14336, "dtype": "bf16", "zipf": 0.0, "expert_parallel": 1,
                                "config": None}
    assert eval(repr(OPS[1].config), {"GemmConfig": pw.GemmConfig}) == OPS[1].config
    assert "bf16" in pw.dtypes() and "fp8_e4m3" in pw.dtypes()


@pytest.mark.parametrize("make, field", [
    (lambda: pw.Gemm(m=-1, n=2, k=3), "gemm.m"),
    (lambda: pw.Gemm(m=1, n=2, k=3, dtype="fp9"), "gemm.dtype"),
    (lambda: pw.Gemm(m=4096, n=4096, k=128, config=pw.GemmConfig(tile_m=128, tile_n=128, tile_k=64, split_k=4)), "gemm.split_k"),
    (lambda: pw.GemmConfig(tile_m=128, tile_n=128, tile_k=64, schedule="fastest"), "gemm.schedule"),
    (lambda: pw.Attention([1, 1], [5], heads=32, kv_heads=8, head_dim=128), "attention.kv_lens"),
    (lambda: pw.Attention.decode(0, 4096, 32, 8, 128), "attention.batch"),
    (lambda: pw.AttentionConfig(impl="flash9"), "attention.impl"),
    (lambda: pw.RmsNorm(tokens=0, hidden=4096), "rmsnorm.tokens"),
    (lambda: pw.FusedMoe(tokens=8, experts=4, top_k=5, hidden=8, intermediate=8), "fused_moe.top_k"),
    (lambda: pw.FusedMoe(tokens=8, experts=4, top_k=2, hidden=8, intermediate=8, zipf=-1), "fused_moe.zipf"),
    (lambda: pw.Elementwise(bytes=float("nan")), "elementwise.bytes"),
    (lambda: pw.Collective("broadcast", bytes=1, ranks=2), "collective.kind"),
    (lambda: pw.Collective("all_reduce", bytes=1, ranks=1), "collective.ranks"),
    (lambda: pw.parse_kernel("gemm:m=1,n=2"), "k"),
])
def test_bad_input_raises_an_error_naming_the_field(make, field):
    with pytest.raises(pw.InvalidInput, match=field.replace(".", r"\.")):
        make()


def test_bad_input_is_a_value_error_and_types_are_checked():
    assert issubclass(pw.InvalidInput, pw.Error)
    assert issubclass(pw.InvalidInput, ValueError)
    assert issubclass(pw.Error, RuntimeError)
    with pytest.raises(TypeError):
        pw.Gemm(m="big", n=2, k=3)
    with pytest.raises(TypeError):
        pw.Gemm(m=2**70, n=2, k=3)  # past int64: refused, never wrapped
