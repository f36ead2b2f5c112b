# The command-line tool, run as a user would. Included by tests/CMakeLists.txt when the CLI
# is built. Successful runs state what they must print (and that no error line appears);
# failing runs go through expect_failure.cmake, which checks for a non-zero exit and exactly
# one "pipeweave: error: ..." line naming the problem.

set(cli "$<TARGET_FILE:pipeweave_cli>")
set(cli_data "${CMAKE_CURRENT_SOURCE_DIR}/data")
set(gemm_text "gemm:m=4096,n=4096,k=4096,dtype=bf16")

function(pipeweave_cli_test name pass_regex)
  add_test(NAME cli.${name} COMMAND ${cli} ${ARGN})
  set_tests_properties(cli.${name} PROPERTIES PASS_REGULAR_EXPRESSION "${pass_regex}"
                                              FAIL_REGULAR_EXPRESSION "pipeweave: error" LABELS cli)
endfunction()

function(pipeweave_cli_failure name error_regex)
  add_test(NAME cli.${name}
           COMMAND ${CMAKE_COMMAND} "-DERROR_REGEX=${error_regex}"
                   -P "${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.cmake" -- ${cli} ${ARGN})
  set_tests_properties(cli.${name} PROPERTIES LABELS cli)
endfunction()

# ---- Listing GPUs --------------------------------------------------------------------------
pipeweave_cli_test(gpus_lists_h100 "\nH100-SXM +hopper +9\\.0 +132 " gpus)
pipeweave_cli_test(gpus_lists_b200 "\nB200 +blackwell +10\\.0 +148 " gpus)
# H100-SXM's dense bf16 peak: 4096 flops/clk/SM x 132 SMs x 1830 MHz = 989.4 TFLOPS.
pipeweave_cli_test(gpus_shows_h100_peak "\nH100-SXM [^\n]* 989\\.[0-9] " gpus)
pipeweave_cli_test(gpus_json "^\\[.*\"format\": \"pipeweave-gpu\".*\"sm_count\": 132.*\\]" gpus --json)

# ---- Predicting --------------------------------------------------------------------------
# A row: latency, bound, efficiency, bottleneck, source, the kernel as given, its config.
set(row_regex "\n +[0-9]+\\.[0-9][0-9] +[0-9]+\\.[0-9][0-9] +[01]\\.[0-9][0-9][0-9] +[a-z0-9]+ +(trained_model|analytical_bound) +gemm:m=4096,n=4096,k=4096,dtype=bf16 \\[tile [^]\n]+\\]")
pipeweave_cli_test(predict_gemm "^GPU H100-SXM \\(132 SMs at 1830 MHz\\)\n +latency_us .*${row_regex}"
                   predict --gpu H100-SXM ${gemm_text})
pipeweave_cli_test(predict_by_device_name "^GPU H100-SXM .*${row_regex}"
                   predict --gpu "NVIDIA H100 80GB HBM3" ${gemm_text})
pipeweave_cli_test(predict_json "\"gpu\": \"H100-SXM\".*\"latency_us\": [0-9]"
                   predict --gpu H100-SXM --json ${gemm_text})
pipeweave_cli_test(predict_json_names_source "\"source\": \"(trained_model|analytical_bound)\""
                   predict --gpu H100-SXM --json ${gemm_text})
pipeweave_cli_test(predict_spec_file "^GPU H100-SXM .*${row_regex}"
                   predict --gpu "${cli_data}/h100_spec.json" ${gemm_text})
pipeweave_cli_test(predict_many_prints_total "rmsnorm:tokens=8192,hidden=4096 .*all_reduce:bytes=16777216,ranks=8 .*\n +[0-9]+\\.[0-9][0-9] total\n"
                   predict --gpu L40S ${gemm_text} rmsnorm:tokens=8192,hidden=4096 all_reduce:bytes=16777216,ranks=8)
pipeweave_cli_test(version "^pipeweave [0-9]+\\.[0-9]+\\.[0-9]+\n$" --version)

# ---- Bad input ---------------------------------------------------------------------------
pipeweave_cli_failure(unknown_gpu "unknown GPU .Voodoo5-6000." predict --gpu Voodoo5-6000 ${gemm_text})
pipeweave_cli_failure(unknown_op "unknown op .conv2d." predict --gpu H100-SXM conv2d:n=1,c=64)
pipeweave_cli_failure(negative_m "gemm\\.m .*-4096" predict --gpu H100-SXM gemm:m=-4096,n=4096,k=4096)
pipeweave_cli_failure(unknown_key "unknown key .tile." predict --gpu H100-SXM gemm:m=1,n=1,k=1,tile=128)
pipeweave_cli_failure(missing_key "gemm\\.k is required" predict --gpu H100-SXM gemm:m=1,n=1)
pipeweave_cli_failure(missing_gpu "predict needs --gpu" predict ${gemm_text})
pipeweave_cli_failure(gpu_without_value "--gpu needs a value" predict ${gemm_text} --gpu)
pipeweave_cli_failure(no_kernel "predict needs at least one KERNEL" predict --gpu H100-SXM)
pipeweave_cli_failure(unknown_option "unknown option --fast" predict --gpu H100-SXM --fast ${gemm_text})
pipeweave_cli_failure(unknown_command "unknown command .estimate." estimate --gpu H100-SXM ${gemm_text})
pipeweave_cli_failure(fp8_on_ampere "no fp8_e4m3 tensor path" predict --gpu A100 gemm:m=1024,n=1024,k=1024,dtype=fp8)
pipeweave_cli_failure(missing_spec_file "cannot open GPU spec file .*no_such_gpu\\.json"
                      predict --gpu "${CMAKE_CURRENT_BINARY_DIR}/no_such_gpu.json" ${gemm_text})
pipeweave_cli_failure(missing_kernels_file "cannot open kernels file"
                      predict --gpu H100-SXM --kernels "${CMAKE_CURRENT_BINARY_DIR}/no_such_kernels.txt")

# Bad spec files, derived from the good one at configure time.
file(READ "${cli_data}/h100_spec.json" good_spec)
string(REGEX REPLACE "\"sm_count\": [0-9]+" "\"sm_count\": 0" zero_sm_spec "${good_spec}")
if(zero_sm_spec STREQUAL good_spec)
  message(FATAL_ERROR "tests/data/h100_spec.json has no sm_count to break")
endif()
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/cli_bad_sm_count.json" "${zero_sm_spec}")
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/cli_not_json.json" "{ \"format\": \"pipeweave-gpu\", ")
pipeweave_cli_failure(bad_spec_field "cli_bad_sm_count\\.json: gpu\\.sm_count must be positive.*got 0"
                      predict --gpu "${CMAKE_CURRENT_BINARY_DIR}/cli_bad_sm_count.json" ${gemm_text})
pipeweave_cli_failure(bad_spec_json "cli_not_json\\.json: GPU spec is not valid JSON"
                      predict --gpu "${CMAKE_CURRENT_BINARY_DIR}/cli_not_json.json" ${gemm_text})
