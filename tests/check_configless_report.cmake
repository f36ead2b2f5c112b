# Checks the per-row CSV of `pipeweave eval --without-configs --report DIR` on
# data/eval_gemm_candidates.csv: one row per shape, cuBLAS's first choice (is_default) as the
# measured time, the kernel without its config (the library picked one):
#   cmake -DREPORT=<dir> -P check_configless_report.cmake
file(READ "${REPORT}/eval.csv" csv)
string(REGEX MATCHALL "\n" lines "${csv}")
list(LENGTH lines rows)
if(NOT rows EQUAL 4)  # header + 3 shapes
  message(FATAL_ERROR "eval.csv has ${rows} lines, expected 4 (a header and one row per shape):\n${csv}")
endif()
if(csv MATCHES "tile_m=")
  message(FATAL_ERROR "eval.csv names a config: the GEMMs were to be predicted without one:\n${csv}")
endif()
if(NOT csv MATCHES "\nH100-SXM,gemm,\"gemm:m=384,n=448,k=1472,dtype=bf16\",5\\.696,")
  message(FATAL_ERROR "eval.csv lacks the first shape at its first choice's 5.696 us:\n${csv}")
endif()
