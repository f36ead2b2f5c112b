#!/usr/bin/env bash
# Builds FlashAttention-3 (Hopper) from the vendored sources, forward only, head dim 128, bf16,
# with varlen, paged KV, split-KV and pack-GQA kept: what collect_attention.py --impl flash3 runs.
#
#   bash cuda_kernels/build_fa3.sh SOURCES.tar.xz DEST      # DEST/hopper is then --fa3-path
#   HDIMS="64 128 256" bash cuda_kernels/build_fa3.sh ...   # other head sizes too (of 64 96 128 192 256)
#
# SOURCES.tar.xz is ../shared/vendor/flash-attention-hopper-src.tar.xz (hopper/ and the CUTLASS
# headers; see its README). Build outside the repository copy on the device (e.g. /root/fa3):
# about 170 s on 16 cores. Needs nvcc, PyTorch and ninja.
set -euo pipefail
tarball=${1:?usage: build_fa3.sh SOURCES.tar.xz DEST}
dest=${2:?usage: build_fa3.sh SOURCES.tar.xz DEST}
hdims=${HDIMS:-128}
for hdim in $hdims; do
  [[ " 64 96 128 192 256 " == *" $hdim "* ]] || { echo "build_fa3: HDIMS lists $hdim; use 64 96 128 192 256, by spaces" >&2; exit 2; }
done
# A build is reused only for the same head sizes (the stamp names them).
if [[ "$(cat "$dest/hdims" 2>/dev/null)" == "$hdims" ]] &&
   python3 -c "import sys; sys.path.insert(0, '$dest/hopper'); import flash_attn_3._C" 2>/dev/null; then
  echo "build_fa3: $dest/hopper already built for head sizes $hdims"
  exit 0
fi
mkdir -p "$dest"
tar xJf "$tarball" -C "$dest"
mkdir -p "$dest/csrc"
ln -sfn ../cutlass "$dest/csrc/cutlass"   # hopper/setup.py reads the headers from ../csrc/cutlass
cd "$dest/hopper"
for part in BACKWARD FP16 FP8 SOFTCAP LOCAL SM80 HDIMDIFF64 HDIMDIFF192 APPENDKV; do
  export "FLASH_ATTENTION_DISABLE_${part}=TRUE"
done
for hdim in 64 96 128 192 256; do
  [[ " $hdims " == *" $hdim "* ]] || export "FLASH_ATTENTION_DISABLE_HDIM${hdim}=TRUE"
done
MAX_JOBS=${MAX_JOBS:-16} NVCC_THREADS=2 python3 setup.py build_ext --inplace > "$dest/build.log" 2>&1 || {
  tail -40 "$dest/build.log"
  exit 1
}
python3 -c "import sys; sys.path.insert(0, '.'); from flash_attn_3 import flash_attn_interface" && echo "$hdims" > "$dest/hdims" &&
  echo "build_fa3: built $dest/hopper"
