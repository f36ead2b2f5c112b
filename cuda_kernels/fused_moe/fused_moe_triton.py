"""A fused-MoE layer as vLLM and SGLang run it on their Triton path, written here from the published
algorithm (vLLM's fused_moe.py): tokens sorted by the expert they are routed to and each expert's
rows padded to BLOCK_SIZE_M (moe_align_block_size), then one grouped GEMM over the sorted rows
for gate-up ([rows, hidden] x [hidden, 2 x intermediate] per expert), SiLU-and-mul, and a second
for down ([rows, intermediate] x [intermediate, hidden]) that multiplies each row by its routing
weight; the top-k rows of a token are summed after. bf16, or fp8 e4m3 weights and activations
with per-tensor / per-expert scales (vLLM's w8a8 path).

The kernel's knobs are the engines' config keys: BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps,
num_stages. Differences from vLLM's kernel, none of which changes what a CTA does: top_k is a
run-time argument (vLLM: a compile-time constant; here it would multiply the compiles by four).

Expert parallelism as vLLM runs it without an all-to-all (`expert_map`): every rank sorts all the
routed rows by their global expert and pads them, then maps each block's expert to its local index,
or -1 where another rank holds it; a block of another rank's expert writes zeros to its rows'
outputs and returns (the ranks' outputs are summed after).
"""
import torch
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["EM", "num_valid_tokens", "top_k"])
def fused_moe_kernel(a_ptr, b_ptr, c_ptr, a_scale_ptr, b_scale_ptr, topk_weights_ptr, sorted_token_ids_ptr, expert_ids_ptr,
                     num_tokens_post_padded_ptr, N, K, EM, num_valid_tokens, top_k,
                     stride_am, stride_ak, stride_be, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                     GROUP_SIZE_M: tl.constexpr, MUL_ROUTED_WEIGHT: tl.constexpr, use_fp8: tl.constexpr,
                     compute_type: tl.constexpr):
    # Grouped ordering of the (M block, N block) grid, as in Triton's matmul tutorial and vLLM.
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(EM, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    # The grid covers the most padded rows any routing could give; blocks past this one's end return.
    num_tokens_post_padded = tl.load(num_tokens_post_padded_ptr)
    if pid_m * BLOCK_SIZE_M >= num_tokens_post_padded:
        return
    offs_token_id = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M).to(tl.int64)
    offs_token = tl.load(sorted_token_ids_ptr + offs_token_id).to(tl.int64)
    token_mask = offs_token < num_valid_tokens
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N).to(tl.int64)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    # Row r of the sorted list is token r // top_k's activations (gate-up), or row r itself (down: top_k = 1).
    off_expert = tl.load(expert_ids_ptr + pid_m).to(tl.int64)
    if off_expert == -1:
        # Another rank's expert (expert parallelism): zeros to this block's rows, as vLLM writes them.
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_token[:, None] + stride_cn * offs_cn[None, :]
        c_mask = token_mask[:, None] & (offs_cn[None, :] < N)
        tl.store(c_ptrs, tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=compute_type), mask=c_mask)
        return
    a_ptrs = a_ptr + (offs_token[:, None] // top_k * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + off_expert * stride_be + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    if use_fp8:
        a_scale = tl.load(a_scale_ptr)
        b_scale = tl.load(b_scale_ptr + off_expert)

    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=token_mask[:, None] & (offs_k[None, :] < K - k * BLOCK_SIZE_K), other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator += tl.dot(a, b)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    if MUL_ROUTED_WEIGHT:
        moe_weight = tl.load(topk_weights_ptr + offs_token, mask=token_mask, other=0)
        accumulator = accumulator * moe_weight[:, None]
    if use_fp8:
        accumulator = (accumulator * a_scale * b_scale).to(compute_type)
    else:
        accumulator = accumulator.to(compute_type)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_token[:, None] + stride_cn * offs_cn[None, :]
    c_mask = token_mask[:, None] & (offs_cn[None, :] < N)
    tl.store(c_ptrs, accumulator, mask=c_mask)


def moe_align_block_size(topk_ids, block_m, experts, local_experts=None):
    """vLLM's moe_align_block_size, in PyTorch: the routed rows (token x top_k, flattened) sorted by
    expert, each expert's run padded to a multiple of block_m with the invalid id numel; the expert of
    each block; and the padded total. The id list is sized for the worst case, as the grid is.
    local_experts (expert parallelism, this rank holding global experts 0 to local_experts - 1): each
    block's expert mapped through vLLM's expert_map, -1 for another rank's."""
    flat = topk_ids.flatten().to(torch.int64)
    numel = flat.numel()
    counts = torch.bincount(flat, minlength=experts)
    padded = (counts + block_m - 1) // block_m * block_m
    starts = torch.cumsum(padded, 0) - padded
    order = torch.argsort(flat, stable=True)
    sorted_experts = flat[order]
    first_of_expert = torch.cumsum(counts, 0) - counts
    rank = torch.arange(numel, device=flat.device) - first_of_expert[sorted_experts]
    max_padded = numel + experts * (block_m - 1)
    if numel < experts:  # vLLM caps the grid this way for small batches
        max_padded = min(max_padded, numel * block_m)
    sorted_ids = torch.full((max_padded,), numel, dtype=torch.int32, device=flat.device)
    sorted_ids[starts[sorted_experts] + rank] = order.to(torch.int32)
    expert_ids = torch.repeat_interleave(torch.arange(experts, device=flat.device, dtype=torch.int32), padded // block_m)
    blocks = -(-max_padded // block_m)
    expert_ids = torch.cat([expert_ids, torch.zeros(blocks - expert_ids.numel(), dtype=torch.int32, device=flat.device)])
    total = torch.tensor([int(padded.sum())], dtype=torch.int32, device=flat.device)
    if local_experts is not None:
        expert_ids = torch.where(expert_ids < local_experts, expert_ids, torch.full_like(expert_ids, -1))
    return sorted_ids, expert_ids, total


def invoke(a, w, c, a_scale, w_scale, topk_weights, sorted_ids, expert_ids, total, top_k, mul_routed_weight, config):
    """One grouped GEMM launch: c[rows, N] = a[row // top_k] @ w[expert].T, over the sorted rows."""
    n, k = w.shape[1], w.shape[2]
    em = sorted_ids.shape[0]
    grid = (triton.cdiv(em, config["BLOCK_SIZE_M"]) * triton.cdiv(n, config["BLOCK_SIZE_N"]),)
    use_fp8 = a.dtype == torch.float8_e4m3fn
    fused_moe_kernel[grid](
        a, w, c, a_scale, w_scale, topk_weights, sorted_ids, expert_ids, total, n, k, em, topk_weights.numel(), top_k,
        a.stride(0), a.stride(1), w.stride(0), w.stride(2), w.stride(1), c.stride(0), c.stride(1),
        BLOCK_SIZE_M=config["BLOCK_SIZE_M"], BLOCK_SIZE_N=config["BLOCK_SIZE_N"], BLOCK_SIZE_K=config["BLOCK_SIZE_K"],
        GROUP_SIZE_M=config["GROUP_SIZE_M"], MUL_ROUTED_WEIGHT=mul_routed_weight, use_fp8=use_fp8,
        compute_type=tl.bfloat16, num_warps=config["num_warps"], num_stages=config["num_stages"])


def fused_moe(hidden_states, w1, w2, topk_weights, topk_ids, config, w1_scale=None, w2_scale=None, a_scale=None,
              global_experts=None):
    """The whole layer, for checking the kernel against a PyTorch reference: bf16 in and out.
    global_experts (expert parallelism): the model's experts, of which w1 and w2 hold the first."""
    tokens, top_k = topk_ids.shape
    experts = w1.shape[0]
    if global_experts is None:
        sorted_ids, expert_ids, total = moe_align_block_size(topk_ids, config["BLOCK_SIZE_M"], experts)
    else:
        sorted_ids, expert_ids, total = moe_align_block_size(topk_ids, config["BLOCK_SIZE_M"], global_experts, experts)
    inter = w2.shape[2]
    cache1 = torch.empty(tokens * top_k, 2 * inter, device=hidden_states.device, dtype=torch.bfloat16)
    cache3 = torch.empty(tokens * top_k, w2.shape[1], device=hidden_states.device, dtype=torch.bfloat16)
    invoke(hidden_states, w1, cache1, a_scale, w1_scale, topk_weights, sorted_ids, expert_ids, total, top_k, False, config)
    gate, up = cache1.float().chunk(2, dim=-1)
    cache2 = (torch.nn.functional.silu(gate) * up).to(hidden_states.dtype if hidden_states.dtype != torch.float8_e4m3fn
                                                     else torch.float8_e4m3fn)
    invoke(cache2, w2, cache3, a_scale, w2_scale, topk_weights, sorted_ids, expert_ids, total, 1, True, config)
    return cache3.view(tokens, top_k, -1).float().sum(dim=1).to(torch.bfloat16)


def vllm_default_config(tokens, experts):
    """vLLM's get_default_config for bf16 and per-tensor fp8 (no block quantisation), as of
    v0.6-v0.8: small blocks when the batch has at most as many tokens as experts, else 64x64x32
    with GROUP_SIZE_M 8; num_warps and num_stages left to Triton's defaults (4 and 3)."""
    if tokens <= experts:
        return {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 3}
    return {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 3}
