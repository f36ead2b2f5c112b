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

# ---- Ranking configs ----------------------------------------------------------------------
set(rank_row "\n +1 +[0-9]+\\.[0-9][0-9] +[0-9]+\\.[0-9][0-9] +[01]\\.[0-9][0-9][0-9] +[a-z0-9]+ +gemm:m=4096,n=4096,k=4096,dtype=bf16,tile_m=[0-9]+,tile_n=[0-9]+,tile_k=64,split_k=1,stages=[0-9]+,cluster_m=[12],cluster_n=[12],swap_ab=[01],schedule=[a-z_]+,raster=[mn]\n +2 ")
pipeweave_cli_test(rank_gemm_candidates "^GPU H100-SXM: [0-9]+ candidates, fastest first\n +rank +latency_us +bound_us +eff +bottleneck +kernel${rank_row}"
                   rank --gpu H100-SXM ${gemm_text})
pipeweave_cli_test(rank_top "\n +3 [^\n]+\n\\([0-9]+ more; --top 0 prints all\\)" rank --gpu H100-SXM --top 3 ${gemm_text})
pipeweave_cli_test(rank_json "^\\{\n +\"candidates\": [0-9]+,\n +\"gpu\": \"H100-SXM\",\n +\"ranked\": \\[.*\"rank\": 1.*\"rank\": 2"
                   rank --gpu H100-SXM --json ${gemm_text})
# Candidates given: they are ranked as they are (two here, so no "more" line).
pipeweave_cli_test(rank_given "^GPU H100-SXM: 2 candidates, fastest first\n[^\n]+\n +1 [^\n]+tile_m=(64|128)[^\n]+\n +2 [^\n]+tile_m=(64|128)[^\n]+\n(\\(no trained|$)"
                   rank --gpu H100-SXM gemm:m=4096,n=4096,k=4096,tile_m=128,tile_n=128,tile_k=64
                   gemm:m=4096,n=4096,k=4096,tile_m=64,tile_n=64,tile_k=64)
# A fused_moe without a config: vLLM's tuning grid and its default config, ranked by the bundled model.
pipeweave_cli_test(rank_fused_moe_candidates "^GPU H100-SXM: [0-9][0-9][0-9][0-9] candidates, fastest first\n[^\n]+\n +1 +[0-9.]+ +[0-9.]+ +[01]\\.[0-9]+ +[a-z0-9]+ +fused_moe:tokens=64,experts=8,top_k=2,hidden=4096,intermediate=7168,dtype=bf16,block_m=[0-9]+,block_n=[0-9]+,block_k=[0-9]+,stages=[2-5],group_m=[0-9]+,warps=[48]\n"
                   rank --gpu H100-SXM fused_moe:tokens=64,experts=8,top_k=2,hidden=4096,intermediate=7168)
pipeweave_cli_failure(rank_needs_gpu "rank needs --gpu" rank ${gemm_text})
pipeweave_cli_failure(rank_needs_kernels "rank needs a GEMM" rank --gpu H100-SXM)
pipeweave_cli_failure(rank_one_configured "one GEMM or fused_moe without a config .* or two or more KERNELs, got gemm:m=64"
                      rank --gpu H100-SXM gemm:m=64,n=64,k=64,tile_m=64,tile_n=64,tile_k=64)
pipeweave_cli_failure(rank_bad_top "--top must be a whole number from 0 to 2147483647, got \"-2\"" rank --gpu H100-SXM --top -2 ${gemm_text})
pipeweave_cli_failure(rank_fp8_on_a100 "fp8" rank --gpu A100-SXM4-80GB gemm:m=64,n=4096,k=4096,dtype=fp8)

# ---- Listing GPUs --------------------------------------------------------------------------
pipeweave_cli_test(gpus_lists_h100 "\nH100-SXM +hopper +9\\.0 +132 " gpus)
pipeweave_cli_test(gpus_lists_b200 "\nB200 +blackwell +10\\.0 +148 " gpus)
# H100-SXM's dense bf16 peak: 4096 flops/clk/SM x 132 SMs x 1830 MHz = 989.4 TFLOPS.
pipeweave_cli_test(gpus_shows_h100_peak "\nH100-SXM +hopper +9\\.0 +132 +1650 +890\\.9 [^\n]* 1980 +989\\.4 +1\\.156  calibrated\n.*\nL40 +ada [^\n]*estimated\n" gpus)
pipeweave_cli_test(gpus_json "^\\[.*\"format\": \"pipeweave-gpu\".*\"sm_count\": 132.*\\]" gpus --json)

# ---- Predicting --------------------------------------------------------------------------
# A row: latency, bound, efficiency, bottleneck, source, the kernel as given, its config.
set(row_regex "\n +[0-9]+\\.[0-9][0-9] +[0-9]+\\.[0-9][0-9] +[01]\\.[0-9][0-9][0-9] +[a-z0-9]+ +(trained_model|analytical_bound) +gemm:m=4096,n=4096,k=4096,dtype=bf16 \\[tile [^]\n]+\\]")
pipeweave_cli_test(predict_gemm "^GPU H100-SXM \\(132 SMs at 1650 MHz\\)\n +latency_us .*${row_regex}"
                   predict --gpu H100-SXM ${gemm_text})
pipeweave_cli_test(predict_by_device_name "^GPU H100-SXM .*${row_regex}"
                   predict --gpu "NVIDIA H100 80GB HBM3" ${gemm_text})
pipeweave_cli_test(predict_json "\"gpu\": \"H100-SXM\".*\"latency_us\": [0-9]"
                   predict --gpu H100-SXM --json ${gemm_text})
pipeweave_cli_test(predict_json_names_source "\"source\": \"(trained_model|analytical_bound)\""
                   predict --gpu H100-SXM --json ${gemm_text})
pipeweave_cli_test(predict_spec_file "^GPU H100-SXM .*${row_regex}"
                   predict --gpu "${cli_data}/h100_spec.json" ${gemm_text})
# Sizes past any GPU's memory are refused: at 1e308 bytes the time was infinite
pipeweave_cli_failure(predict_collective_too_large "collective.bytes must be at most 1125899906842624 \\(a pebibyte, past any GPU's memory\\), got 1e\\+308"
                      predict --gpu H100-SXM all_reduce:bytes=1e308,ranks=2)
pipeweave_cli_test(predict_many_prints_total "rmsnorm:tokens=8192,hidden=4096 .*all_reduce:bytes=16777216,ranks=8 .*\n +[0-9]+\\.[0-9][0-9] total\n"
                   predict --gpu L40S ${gemm_text} rmsnorm:tokens=8192,hidden=4096 all_reduce:bytes=16777216,ranks=8)
pipeweave_cli_test(version "^pipeweave [0-9]+\\.[0-9]+\\.[0-9]+\n$" --version)
pipeweave_cli_failure(version_takes_no_arguments "--version takes no arguments, got \"extra\"" --version extra)
pipeweave_cli_failure(predict_gpu_twice "--gpu given twice \\(\"H100-SXM\" and \"H200-SXM\"\\): it takes one value"
                      predict --gpu H100-SXM --gpu H200-SXM gemm:m=1,n=1,k=1)

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
# A report folder whose files would be written over an input: refused before any work (the
# input was lost, exit 0).
# (copies in the build tree: were the check to fail, no committed file is written over)
set(h200_calibration "${CMAKE_CURRENT_BINARY_DIR}/report_over_input/calibration")
file(COPY "${PROJECT_SOURCE_DIR}/data/gpus/H200-SXM.calibration/microbench-1.json"
          "${PROJECT_SOURCE_DIR}/data/gpus/H200-SXM.calibration/link.csv" DESTINATION "${h200_calibration}")
pipeweave_cli_failure(report_over_input_calibrate "--report [^ ]+ would write link.csv over --link [^ ]+link.csv: give another folder"
                      calibrate --from-log "${h200_calibration}/microbench-1.json" --link "${h200_calibration}/link.csv"
                      --report "${h200_calibration}")
set(h100_report "${CMAKE_CURRENT_BINARY_DIR}/report_over_input/e2e")
file(COPY "${PROJECT_SOURCE_DIR}/data/e2e/H100-SXM/report/iterations.csv" "${PROJECT_SOURCE_DIR}/data/e2e/workload_llama8b_48.json"
     DESTINATION "${h100_report}")
pipeweave_cli_failure(report_over_input_e2e "--report [^ ]+ would write iterations.csv over --measured"
                      e2e --gpu H100-SXM --workload "${h100_report}/workload_llama8b_48.json"
                      --measured "${h100_report}/iterations.csv" --report "${h100_report}")
# No command: one error line like any other mistake (the overview went to stderr, 38 lines).
pipeweave_cli_failure(no_command "no command given \\(pipeweave --help lists them\\)")
# A path with a newline in it is shown escaped: the error stays one line.
pipeweave_cli_failure(error_line_escapes_newline "cannot open GPU spec file /nonexistent/no\\\\x0asuch\\.json"
                      predict --gpu "/nonexistent/no\nsuch.json" ${gemm_text})
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

# ---- Calibrating -------------------------------------------------------------------------
# tests/data/microbench_synthetic.json: a hand-made log of an H100 whose runs take 10.1, 10 and
# 9.9 ms; bf16 moves 8.8e12 flop per run at 1650 MHz: 880 TFLOP/s, 8.8e14 / (132 x 1.65e9) =
# 4040.4 flop/clk/SM, 4040.4 / 4096 = 98.6% of the peak at that clock; DRAM read 3.0e10 bytes:
# 3000 GB/s, 89.6% of 3350; 1e4 launches: 1.00 us each.
set(synthetic_log "${cli_data}/microbench_synthetic.json")
pipeweave_cli_test(calibrate_from_log
  "catalog entry H100-SXM\n.*\ntensor bf16 +880 TFLOP/s +2\\.0% +1650 +892 +98\\.6% +989 .*\nDRAM read +3000 GB/s .* 89\\.6% .*\nkernel launch +1\\.00 us .*\nspec H100-SXM: 1650 MHz; per SM per clock: tensor bf16 4040,"
  calibrate --from-log "${synthetic_log}")
# (the same log by another path: the same text twice is refused as a flag given twice)
pipeweave_cli_test(calibrate_two_logs_show_run_to_run "2 log\\(s\\).*run-to-run.*\ntensor bf16 +880 TFLOP/s +2\\.0% +0\\.0% +1650 "
  calibrate --from-log "${synthetic_log}" --from-log "${cli_data}/./microbench_synthetic.json")
pipeweave_cli_failure(calibrate_same_log_twice "--from-log given \"[^\"]*microbench_synthetic\\.json\" twice"
  calibrate --from-log "${synthetic_log}" --from-log "${synthetic_log}")
# (keys in alphabetical order, as the JSON writer sorts them)
pipeweave_cli_test(calibrate_json "^\\{.*\"calibration\": \\{.*\"catalog_entry\": \"H100-SXM\".*\"format\": \"pipeweave-gpu\".*\"sm_clock_mhz\": 1650\\.0"
  calibrate --from-log "${synthetic_log}" --json)
# The spec it writes is one predict reads: the clock line shows the calibrated 1650 MHz.
set(calibrated_spec "${CMAKE_CURRENT_BINARY_DIR}/calibrated_synthetic.json")
set(calibration_report "${CMAKE_CURRENT_BINARY_DIR}/calibration_report")
pipeweave_cli_test(calibrate_writes_spec "wrote [^\n]*calibrated_synthetic\\.json\nwrote [^\n]*calibration\\.csv and [^\n]*calibration\\.svg"
  calibrate --from-log "${synthetic_log}" --out "${calibrated_spec}" --report "${calibration_report}")
set_tests_properties(cli.calibrate_writes_spec PROPERTIES FIXTURES_SETUP calibrated_spec)
pipeweave_cli_test(predict_with_calibrated_spec "^GPU H100-SXM \\(132 SMs at 1650 MHz\\)\n.*${row_regex}"
  predict --gpu "${calibrated_spec}" ${gemm_text})
set_tests_properties(cli.predict_with_calibrated_spec PROPERTIES FIXTURES_REQUIRED calibrated_spec)
add_test(NAME cli.calibrate_report_files
         COMMAND ${CMAKE_COMMAND} -DREPORT=${calibration_report} -P "${CMAKE_CURRENT_SOURCE_DIR}/check_calibration_report.cmake")
set_tests_properties(cli.calibrate_report_files PROPERTIES FIXTURES_REQUIRED calibrated_spec LABELS cli)

# All-reduce times made as 5 us + bytes / 300 GB/s (graph rows; eager rows 25 us slower, ignored):
# the fit must find those two figures, and say how far the catalog's 450 GB/s and 2 us were.
set(link_report "${CMAKE_CURRENT_BINARY_DIR}/link_report")
pipeweave_cli_test(calibrate_link
  "link fitted to 5 all-reduces timed in CUDA graphs: 300\\.0 GB/s per direction, 5\\.00 us per step \\(mean error 0\\.0%; [0-9.]+% with 450 GB/s and 2\\.00 us\\)\n +ranks +bytes +measured_us +before_us +fitted_us\n +2 +4096 +5\\.01 +2\\.01 +5\\.01\n.*wrote [^\n]*link\\.csv and [^\n]*link\\.svg"
  calibrate --from-log "${synthetic_log}" --link "${cli_data}/allreduce_synthetic.csv" --report "${link_report}")
# The H100's four prefill GEMMs measured alone and back to back (data/e2e/H100-SXM/sustained_load):
# 1.156x together, whatever the log; the utilisation they were at depends on the log's tensor rate.
set(sustained_dir "${PROJECT_SOURCE_DIR}/data/e2e/H100-SXM/sustained_load")
pipeweave_cli_failure(calibrate_sustained_one_file "--sustained must name two files \\(the GEMMs timed alone, then back to back\\)"
  calibrate --from-log "${synthetic_log}" --sustained "${sustained_dir}/prefill_gemm_isolated.csv,${sustained_dir}/./prefill_gemm_isolated.csv")
pipeweave_cli_test(calibrate_sustained
  "\nsustained load: tensor-bound kernels x1\\.156 back to back \\([0-9]+ MHz effective of 1980\\) from a tensor utilisation of 0\\.[0-9]+; measured on 4 GEMMs \\(--sustained\\)"
  calibrate --from-log "${synthetic_log}" --sustained "${sustained_dir}/prefill_gemm_isolated.csv,${sustained_dir}/prefill_gemm_sustained.csv")
pipeweave_cli_failure(calibrate_link_bandwidth_out_of_range "--link-bandwidth must be a number of GB/s within \\[0\\.001, 1e\\+06\\]"
                      calibrate --from-log "${synthetic_log}" --link-bandwidth 1e308 --json)
# The bundled configless networks name their chooser as data/models/gemm.json, from the
# repository's root: from any other folder the bundled GEMM model compiled in from it answers.
pipeweave_cli_test(eval_configless_elsewhere "\noverall +3 "
                   eval --data "${cli_data}/eval_gemm_candidates.csv" --model "${PROJECT_SOURCE_DIR}/data/models/gemm_configless_bf16.json.gz"
                   --model "${PROJECT_SOURCE_DIR}/data/models/gemm_configless_fp8.json.gz")
set_tests_properties(cli.eval_configless_elsewhere PROPERTIES WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
# Two model files for one family: the library keeps the later, so the command line refuses the pair
pipeweave_cli_failure(predict_two_models_one_family "--model [^ ]*rmsnorm\\.json and --model [^ ]*rmsnorm_copy\\.json both answer for rmsnorm kernels: give one"
                      predict --gpu H100-SXM --model "${PROJECT_SOURCE_DIR}/data/models/rmsnorm.json"
                      --model "${CMAKE_CURRENT_BINARY_DIR}/rmsnorm_copy.json" rmsnorm:tokens=1,hidden=4096)
file(COPY_FILE "${PROJECT_SOURCE_DIR}/data/models/rmsnorm.json" "${CMAKE_CURRENT_BINARY_DIR}/rmsnorm_copy.json")
pipeweave_cli_test(calibrate_link_bandwidth "\"link_bandwidth_gb_s\": 321\\.0,.*\"source\": \"[^\"]*link bandwidth 321 GB/s given \\(--link-bandwidth"
  calibrate --from-log "${synthetic_log}" --link-bandwidth 321 --json)
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/allreduce_tiny.csv" "ranks,bytes,mode,measured_us,spread\n2,4096,graph,1e-300,0\n2,8192,graph,10,0\n")
pipeweave_cli_failure(calibrate_link_out_of_range "allreduce_tiny\\.csv line 2 column measured_us must be within \\[0\\.001, 1e11\\] us, got \"1e-300\""
                      calibrate --from-log "${synthetic_log}" --link "${CMAKE_CURRENT_BINARY_DIR}/allreduce_tiny.csv")
# The fit's own errors name the file too (timings that barely grow fit a link past any GPU's)
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/allreduce_flat.csv" "ranks,bytes,mode,measured_us\n2,4096,graph,5\n2,1048576,graph,5\n2,16777216,graph,5.001\n")
pipeweave_cli_failure(calibrate_link_flat "--link [^ ]+allreduce_flat\\.csv: the all-reduce timings fit a link of .* past any GPU's"
                      calibrate --from-log "${synthetic_log}" --link "${CMAKE_CURRENT_BINARY_DIR}/allreduce_flat.csv")
pipeweave_cli_failure(calibrate_link_missing "cannot open all-reduce measurements file .*no_such\\.csv"
                      calibrate --from-log "${synthetic_log}" --link "${CMAKE_CURRENT_BINARY_DIR}/no_such.csv")
pipeweave_cli_failure(calibrate_missing_log "cannot open microbenchmark log file .*no_such_log\\.json"
                      calibrate --from-log "${CMAKE_CURRENT_BINARY_DIR}/no_such_log.json")
file(READ "${synthetic_log}" synthetic_text)
string(REPLACE "\"dram_write\"" "\"dram_sideways\"" unknown_bench_text "${synthetic_text}")
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/cli_unknown_benchmark.json" "${unknown_bench_text}")
pipeweave_cli_failure(calibrate_unknown_benchmark "cli_unknown_benchmark\\.json: microbench\\.benchmarks\\[8\\]\\.name .*\"dram_sideways\""
                      calibrate --from-log "${CMAKE_CURRENT_BINARY_DIR}/cli_unknown_benchmark.json")
pipeweave_cli_failure(calibrate_from_log_with_quick "--from-log re-reads saved logs"
                      calibrate --from-log "${synthetic_log}" --quick)
pipeweave_cli_failure(calibrate_bad_runs "--runs must be a whole number from 1 to 100, got \"0\"" calibrate --runs 0)
pipeweave_cli_failure(calibrate_unknown_option "unknown option --fast for calibrate" calibrate --fast)
# Logs of pipeweave-microbench --sms (tests/data/microbench_synthetic_sm64.json: 64 of an H100's
# 132 SMs) make the spec of a 64-SM GPU named for its count; --sms reaches the microbenchmarks.
set(synthetic_sm64_log "${cli_data}/microbench_synthetic_sm64.json")
pipeweave_cli_test(calibrate_sm_limited_log
  "^NVIDIA H100 80GB HBM3 \\(compute capability 9\\.0, 64 SMs of 132 \\(--sms\\), .*catalog entry H100-SXM\n.*\ntensor bf16 +468 TFLOP/s +2\\.0% +1830 +4[78][0-9] +9[0-9]\\.[0-9]% .*\nspec H100-SXM-sm64: 1830 MHz; per SM per clock: tensor bf16 4000,"
  calibrate --from-log "${synthetic_sm64_log}")
pipeweave_cli_failure(calibrate_from_log_with_sms "--from-log re-reads saved logs: it does not combine with --quick, --runs, --sms"
                      calibrate --from-log "${synthetic_sm64_log}" --sms 64)
pipeweave_cli_failure(calibrate_bad_sms "--sms must be a whole number from 1 to 4096, got \"0\"" calibrate --sms 0)
# A stand-in for pipeweave-microbench that writes the --sms log only when given --sms 60.
set(fake_microbench "${CMAKE_CURRENT_BINARY_DIR}/fake_sms/pipeweave-microbench")  # named so: its error line is relayed
file(WRITE "${fake_microbench}" "#!/bin/sh\nout= sms=\nwhile [ $# -gt 0 ]; do case $1 in --out) out=$2; shift;; --sms) sms=$2; shift;; esac; shift; done\n"
     "[ \"$sms\" = 60 ] || { echo \"pipeweave-microbench: error: expected --sms 60, got '$sms'\"; exit 2; }\n"
     "cp '${synthetic_sm64_log}' \"$out\"\n")
file(CHMOD "${fake_microbench}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
add_test(NAME cli.calibrate_passes_sms
         COMMAND ${CMAKE_COMMAND} -E env PIPEWEAVE_MICROBENCH=${fake_microbench} ${cli} calibrate --sms 60)
set_tests_properties(cli.calibrate_passes_sms PROPERTIES PASS_REGULAR_EXPRESSION "\nspec H100-SXM-sm64: 1830 MHz"
                                                         FAIL_REGULAR_EXPRESSION "pipeweave: error" LABELS cli)
add_test(NAME cli.calibrate_without_sms_passes_none
         COMMAND ${CMAKE_COMMAND} -E env PIPEWEAVE_MICROBENCH=${fake_microbench}
                 ${CMAKE_COMMAND} "-DERROR_REGEX=the microbenchmarks could not run: expected --sms 60, got ''"
                 -P "${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.cmake" -- ${cli} calibrate)
set_tests_properties(cli.calibrate_without_sms_passes_none PROPERTIES LABELS cli)
add_test(NAME cli.calibrate_microbench_missing
         COMMAND ${CMAKE_COMMAND} -E env PIPEWEAVE_MICROBENCH=${CMAKE_CURRENT_BINARY_DIR}/no-such-microbench
                 ${CMAKE_COMMAND} "-DERROR_REGEX=PIPEWEAVE_MICROBENCH names .*no-such-microbench, which does not exist"
                 -P "${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.cmake" -- ${cli} calibrate)
set_tests_properties(cli.calibrate_microbench_missing PROPERTIES LABELS cli)
# With the microbenchmarks built but no GPU visible (CI has none; on a GPU machine
# CUDA_VISIBLE_DEVICES hides it), calibrate fails with one line saying so.
if(TARGET pipeweave_microbench)
  add_test(NAME cli.calibrate_without_gpu
           COMMAND ${CMAKE_COMMAND} -E env CUDA_VISIBLE_DEVICES= PIPEWEAVE_MICROBENCH=$<TARGET_FILE:pipeweave_microbench>
                   ${CMAKE_COMMAND} "-DERROR_REGEX=the microbenchmarks could not run: no CUDA GPU is visible"
                   -P "${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.cmake" -- ${cli} calibrate --quick)
  set_tests_properties(cli.calibrate_without_gpu PROPERTIES LABELS cli)
endif()

# ---- Shape lists and measurements ---------------------------------------------------------
pipeweave_cli_test(shapes_gemm "^dtype,m,n,k\n(bf16|fp8_e4m3),[0-9]+,[0-9]+,[0-9]+\n" shapes --op gemm --count 20)
pipeweave_cli_test(shapes_rmsnorm "^dtype,tokens,hidden,fused_residual\nbf16,[0-9]+,[0-9]+,[01]\n" shapes --op rmsnorm --count 5)
pipeweave_cli_test(shapes_silu_fp16 "^dtype,tokens,dim\nfp16,[0-9]+,[0-9]+\n" shapes --op silu_mul --count 5 --dtypes fp16)
add_test(NAME cli.shapes_seeded
         COMMAND ${CMAKE_COMMAND} -DCLI=${cli} -DWORK=${CMAKE_CURRENT_BINARY_DIR}/shapes_seeded
                 -DCOMMITTED=${PROJECT_SOURCE_DIR}/data/shapes -P "${CMAKE_CURRENT_SOURCE_DIR}/check_shapes.cmake")
set_tests_properties(cli.shapes_seeded PROPERTIES LABELS cli)
pipeweave_cli_failure(shapes_unknown_op "--op must be gemm, rmsnorm, silu_mul, attention, attention_decode or attention_decode_long, got \"conv\"" shapes --op conv)
# Serving-context decode batches: every query length 1, every context at most 4 digits (the cap is 8192;
# CMake's regular expressions have no {m,n}).
pipeweave_cli_test(shapes_attention_decode "^dtype,q_lens,kv_lens,heads,kv_heads,head_dim,causal\n(bf16,1(/1)*,[0-9][0-9]?[0-9]?[0-9]?(/[0-9][0-9]?[0-9]?[0-9]?)*,[0-9]+,[0-9]+,128,1\n)+$"
                   shapes --op attention_decode --count 6)
pipeweave_cli_test(shapes_attention "^dtype,q_lens,kv_lens,heads,kv_heads,head_dim,causal\nbf16,[0-9/]+,[0-9/]+,[0-9]+,[0-9]+,128,1\n"
                   shapes --op attention --count 4)
# Other head sizes: every row of the list has it (Gemma's 256 here), none has 128.
pipeweave_cli_test(shapes_attention_head_dim "^dtype,q_lens,kv_lens,heads,kv_heads,head_dim,causal\n(bf16,[0-9/]+,[0-9/]+,[0-9]+,[0-9]+,256,1\n)+$"
                   shapes --op attention --count 5 --head-dim 256)
pipeweave_cli_failure(shapes_head_dim_bad "--head-dim must be 64, 128 or 256, got \"96\"" shapes --op attention --head-dim 96)
pipeweave_cli_failure(shapes_no_dtypes "--dtypes must list items joined by commas, none of them empty, got \",\"" shapes --op gemm --dtypes ,)
pipeweave_cli_failure(shapes_dtypes_twice "--dtypes must list each data type once, bf16 is listed twice, got \"bf16,fp8_e4m3,bf16\"" shapes --op gemm --dtypes bf16,fp8_e4m3,bf16)
pipeweave_cli_failure(shapes_empty_dtype "--dtypes must list items joined by commas, none of them empty, got \"bf16,,fp8_e4m3\""
                      shapes --op gemm --dtypes bf16,,fp8_e4m3)
pipeweave_cli_failure(shapes_head_dim_gemm "--head-dim applies to --op attention, attention_decode and attention_decode_long only, got \"128\""
                      shapes --op gemm --head-dim 128)
pipeweave_cli_failure(shapes_fp8_norm "--dtypes must list bf16 or fp16, got \"fp8_e4m3\"" shapes --op rmsnorm --dtypes fp8_e4m3)
pipeweave_cli_failure(shapes_bad_count "--count must be a whole number from 1 to 1000000, got \"-3\"" shapes --op gemm --count -3)

set(raw_gemm "${cli_data}/collect_raw_gemm.jsonl")
set(collected_csv "${CMAKE_CURRENT_BINARY_DIR}/collected_gemm.csv")
pipeweave_cli_test(collect_from_raw "^wrote 2 rows to [^\n]*collected_gemm\\.csv\n$" collect --from-raw "${raw_gemm}" --out "${collected_csv}")
configure_file("${raw_gemm}" "${CMAKE_CURRENT_BINARY_DIR}/collect_raw_gemm_run2.jsonl" COPYONLY)
pipeweave_cli_test(collect_from_raw_runs "^wrote 2 rows to [^\n]*collected_gemm_runs\\.csv \\(the median of 2 runs\\)\n$"
                   collect --from-raw "${raw_gemm}" --from-raw "${CMAKE_CURRENT_BINARY_DIR}/collect_raw_gemm_run2.jsonl"
                   --out "${CMAKE_CURRENT_BINARY_DIR}/collected_gemm_runs.csv")
pipeweave_cli_failure(collect_same_run_twice "--from-raw given \"[^\"]*collect_raw_gemm\\.jsonl\" twice"
                      collect --from-raw "${raw_gemm}" --from-raw "${raw_gemm}" --out "${collected_csv}")
pipeweave_cli_failure(collect_same_run_by_another_path "is the same file as --from-raw"
                      collect --from-raw "${raw_gemm}" --from-raw "${cli_data}/./collect_raw_gemm.jsonl" --out "${collected_csv}")
pipeweave_cli_failure(collect_needs_out "collect needs --out" collect --from-raw "${raw_gemm}")
pipeweave_cli_failure(collect_missing_raw "cannot open raw measurements file .*no_such\\.jsonl"
                      collect --from-raw "${CMAKE_CURRENT_BINARY_DIR}/no_such.jsonl" --out "${collected_csv}")
pipeweave_cli_failure(collect_bad_op "--op must be gemm, rmsnorm or silu_mul, got \"conv2d\""
                      collect --op conv2d --shapes "${raw_gemm}" --out "${collected_csv}")
pipeweave_cli_failure(collect_attention_points_to_script "collect_attention\\.py"
                      collect --op attention --shapes "${raw_gemm}" --out "${collected_csv}")
pipeweave_cli_failure(collect_missing_shapes "cannot open shape list .*no_such_shapes\\.csv"
                      collect --op gemm --shapes "${CMAKE_CURRENT_BINARY_DIR}/no_such_shapes.csv" --out "${collected_csv}")
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/cli_raw_bad.jsonl" "{\"op\": \"gemm\"}\n")
pipeweave_cli_failure(collect_bad_raw "cli_raw_bad\\.jsonl: line 1: op .*\"device\""
                      collect --from-raw "${CMAKE_CURRENT_BINARY_DIR}/cli_raw_bad.jsonl" --out "${collected_csv}")
# pipeweave-collect --sms 64 (tests/data/collect_raw_gemm_sm64.jsonl, measured on an H100): rows of
# H100-SXM-sm64 (test_measurements.cpp checks them); --sms reaches the tool, and not --from-raw.
set(raw_gemm_sm64 "${cli_data}/collect_raw_gemm_sm64.jsonl")
pipeweave_cli_test(collect_from_raw_sm_limited "^wrote 3 rows to [^\n]*collected_gemm_sm64\\.csv\n$"
                   collect --from-raw "${raw_gemm_sm64}" --out "${CMAKE_CURRENT_BINARY_DIR}/collected_gemm_sm64.csv")
pipeweave_cli_failure(collect_from_raw_with_sms "--from-raw converts saved records: it takes only --out"
                      collect --from-raw "${raw_gemm_sm64}" --sms 64 --out "${collected_csv}")
pipeweave_cli_failure(collect_bad_sms "--sms must be a whole number from 1 to 4096, got \"8x\""
                      collect --op gemm --shapes "${raw_gemm}" --sms 8x --out "${collected_csv}")
set(fake_collect "${CMAKE_CURRENT_BINARY_DIR}/fake_sms/pipeweave-collect")
file(WRITE "${fake_collect}" "#!/bin/sh\nout= sms=\nwhile [ $# -gt 0 ]; do case $1 in --out) out=$2; shift;; --sms) sms=$2; shift;; esac; shift; done\n"
     "[ \"$sms\" = 64 ] || { echo \"pipeweave-collect: error: expected --sms 64, got '$sms'\"; exit 2; }\n"
     "cp '${raw_gemm_sm64}' \"$out\"\n")
file(CHMOD "${fake_collect}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
add_test(NAME cli.collect_passes_sms
         COMMAND ${CMAKE_COMMAND} -E env PIPEWEAVE_COLLECT=${fake_collect}
                 ${cli} collect --op gemm --shapes "${raw_gemm}" --sms 64 --out "${CMAKE_CURRENT_BINARY_DIR}/collected_gemm_sm64_tool.csv")
set_tests_properties(cli.collect_passes_sms PROPERTIES PASS_REGULAR_EXPRESSION "^wrote 3 rows to [^\n]*collected_gemm_sm64_tool\\.csv\n$"
                                                       FAIL_REGULAR_EXPRESSION "pipeweave: error" LABELS cli)
add_test(NAME cli.collect_tool_missing
         COMMAND ${CMAKE_COMMAND} -E env PIPEWEAVE_COLLECT=${CMAKE_CURRENT_BINARY_DIR}/no-such-collect
                 ${CMAKE_COMMAND} "-DERROR_REGEX=PIPEWEAVE_COLLECT names .*no-such-collect, which does not exist"
                 -P "${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.cmake" -- ${cli} collect --op gemm --shapes ${raw_gemm} --out ${collected_csv})
set_tests_properties(cli.collect_tool_missing PROPERTIES LABELS cli)
if(TARGET pipeweave_collect)
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/cli_shapes.csv" "dtype,m,n,k\nbf16,16,4096,4096\n")
  add_test(NAME cli.collect_without_gpu
           COMMAND ${CMAKE_COMMAND} -E env CUDA_VISIBLE_DEVICES= PIPEWEAVE_COLLECT=$<TARGET_FILE:pipeweave_collect>
                   ${CMAKE_COMMAND} "-DERROR_REGEX=the measurements could not run: no CUDA GPU is visible"
                   -P "${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.cmake" -- ${cli} collect --op gemm
                   --shapes ${CMAKE_CURRENT_BINARY_DIR}/cli_shapes.csv --out ${collected_csv})
  set_tests_properties(cli.collect_without_gpu PROPERTIES LABELS cli)
endif()

# ---- Evaluating ---------------------------------------------------------------------------
set(eval_csv "${cli_data}/eval_silu_mul.csv")
pipeweave_cli_test(eval_table "^gpu +rows +MAPE% .*\nH100-SXM +3 [^\n]* catalog\nH200-SXM +2 [^\n]*H200-SXM\\.calibrated\\.json\noverall +5 "
                   eval --data "${eval_csv}" --spec "H200-SXM=${PROJECT_SOURCE_DIR}/data/gpus/H200-SXM.calibrated.json")
pipeweave_cli_test(eval_json "\"overall\": \\{.*\"mape_pct\": [0-9.]+.*\"roofline_baseline\""
                   eval --data "${eval_csv}" --json)
pipeweave_cli_test(eval_report "wrote [^\n]*eval\\.csv and [^\n]*eval\\.svg"
                   eval --data "${eval_csv}" --report "${CMAKE_CURRENT_BINARY_DIR}/eval_report")
# --ranking: three measured shapes of 8 cuBLASLt candidates each (from the H100 data).
set(ranking_csv "${cli_data}/eval_gemm_candidates.csv")
pipeweave_cli_test(eval_ranking "ordered by the predicted latency +\\| the library's own order[^\n]*\ngpu +shapes +rows +\\| +spearman +best% +slowdown% [^\n]*\nH100-SXM +3 +24 \\| +-?[01]\\.[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ \\| [^\n]*\noverall +3 +24 \\|"
                   eval --data "${ranking_csv}" --ranking)
pipeweave_cli_test(eval_ranking_pairs "\npairs measured +order by +<=1% apart +1-2% apart +2-5% apart +5-10% apart +10-20% apart +>20% apart\nH100-SXM +predicted +[0-9.]+% of [0-9]+ +[0-9.]+% of [0-9]+ +[0-9.]+% of [0-9]+ +[0-9.]+% of [0-9]+ +[0-9.]+% of [0-9]+ +[0-9.]+% of [0-9]+\nH100-SXM +heuristic +[0-9.]+% of [0-9]+ +[0-9.]+% of [0-9]+ +[0-9.]+% of [0-9]+ +[0-9.]+% of [0-9]+ +[0-9.]+% of [0-9]+ +[0-9.]+% of [0-9]+\noverall +predicted"
                   eval --data "${ranking_csv}" --ranking)
pipeweave_cli_test(eval_ranking_json_pairs "\"pairs_by_measured_gap\": \\[\n +\\{\n +\"measured_apart\": \"<=1%\",\n +\"misordered_pairs\": [0-9]+,\n +\"misordered_pct\": [0-9.e+-]+,\n +\"pairs\": [0-9]+"
                   eval --data "${ranking_csv}" --ranking --json)
# --ranking with --report writes every candidate's row too (it used to return before the report)
pipeweave_cli_test(eval_ranking_report "overall +3 +24 \\|[^\n]*\n.*wrote [^\n]*eval\\.csv and [^\n]*eval\\.svg"
                   eval --data "${ranking_csv}" --ranking --report "${CMAKE_CURRENT_BINARY_DIR}/eval_ranking_report")
pipeweave_cli_test(eval_ranking_json "\"ranking\": \\{.*\"H100-SXM\": \\{.*\"library_first_choice\": \\{.*\"best_found_pct\".*\"shapes\": 3"
                   eval --data "${ranking_csv}" --ranking --json)
# Without configs: one row per shape (cuBLAS's first choice), predicted with the library's own pick.
set(configless_report "${CMAKE_CURRENT_BINARY_DIR}/configless_report")
pipeweave_cli_test(eval_without_configs "\nH100-SXM +3 [^\n]*\noverall +3 "
                   eval --data "${ranking_csv}" --without-configs --report "${configless_report}")
set_tests_properties(cli.eval_without_configs PROPERTIES FIXTURES_SETUP configless_report)
add_test(NAME cli.eval_without_configs_report
         COMMAND ${CMAKE_COMMAND} -DREPORT=${configless_report} -P "${CMAKE_CURRENT_SOURCE_DIR}/check_configless_report.cmake")
set_tests_properties(cli.eval_without_configs_report PROPERTIES FIXTURES_REQUIRED configless_report LABELS cli)
pipeweave_cli_failure(eval_ranking_not_without_configs "--ranking orders every candidate of a shape; --without-configs"
                      eval --data "${ranking_csv}" --ranking --without-configs)
pipeweave_cli_failure(eval_ranking_needs_candidates "no shape with two or more measured candidates" eval --data "${eval_csv}" --ranking)
pipeweave_cli_failure(eval_ranking_not_default_only "--ranking orders every candidate" eval --data "${ranking_csv}" --ranking --default-configs)
pipeweave_cli_failure(eval_needs_data "eval needs --data" eval --json)
pipeweave_cli_failure(eval_bad_spec "--spec must be GPU=FILE" eval --data "${eval_csv}" --spec H100-SXM)
pipeweave_cli_failure(eval_missing_data "cannot open measurements file .*nothing\\.csv" eval --data "${CMAKE_CURRENT_BINARY_DIR}/nothing.csv")
pipeweave_cli_failure(eval_configless_and_default "--without-configs keeps each shape's default config already: give it without --default-configs"
                      eval --data "${eval_csv}" --without-configs --default-configs)
pipeweave_cli_failure(eval_specs_not_a_folder "--specs must be a folder of <GPU>\\.calibrated\\.json specs, got \"[^\"]*no_such_folder\""
                      eval --data "${eval_csv}" --specs "${CMAKE_CURRENT_BINARY_DIR}/no_such_folder")
pipeweave_cli_failure(eval_spec_twice "--spec must name each GPU once \\(H200-SXM is [^)]*H200-SXM\\.calibrated\\.json already\\)"
                      eval --data "${eval_csv}" --spec "H200-SXM=${PROJECT_SOURCE_DIR}/data/gpus/H200-SXM.calibrated.json"
                      --spec "H200-SXM=${PROJECT_SOURCE_DIR}/data/gpus/H100-SXM.calibrated.json")
pipeweave_cli_failure(eval_model_of_other_family "--model [^ ]*gemm\\.json answers for gemm kernels, and no row scored is one"
                      eval --data "${eval_csv}" --model "${PROJECT_SOURCE_DIR}/data/models/gemm.json")
pipeweave_cli_failure(eval_without_configs_no_gemm "--without-configs scores GEMMs given without their config, and --data holds no GEMM row"
                      eval --data "${eval_csv}" --without-configs)
pipeweave_cli_failure(eval_default_configs_all_default "--default-configs keeps each shape's first choice \\(is_default\\), and every row of --data is one"
                      eval --data "${eval_csv}" --default-configs)
pipeweave_cli_failure(eval_spec_for_other_gpu "--spec must name a GPU the rows were measured on \\(H100-SXM, H200-SXM\\), got \"B200=[^\"]*\""
                      eval --data "${eval_csv}" --spec "B200=${PROJECT_SOURCE_DIR}/data/gpus/H200-SXM.calibrated.json")

# ---- Training (a tiny model on a 300-row sample: the path works; full training is a command) --
set(train_sample "${cli_data}/train_sample_silu_mul.csv")
set(tiny_model "${CMAKE_CURRENT_BINARY_DIR}/tiny_silu_mul.json")
pipeweave_cli_test(train_tiny "held-out shapes, the network alone: [0-9]+ rows; MAPE [0-9.]+% \\(roofline [0-9.]+%\\).*\nwrote [^\n]*tiny_silu_mul\\.json \\(best epoch [0-9]+"
                   train --op silu_mul --data "${train_sample}" --out "${tiny_model}" --hidden 16,8 --epochs 8 --specs "${PROJECT_SOURCE_DIR}/data/gpus")
set_tests_properties(cli.train_tiny PROPERTIES FIXTURES_SETUP tiny_model)
pipeweave_cli_test(eval_tiny_model_held_out "\nH100-SXM +[0-9]+ +[0-9.]+ .*\noverall "
                   eval --model "${tiny_model}" --held-out --data "${train_sample}" --specs "${PROJECT_SOURCE_DIR}/data/gpus")
set_tests_properties(cli.eval_tiny_model_held_out PROPERTIES FIXTURES_REQUIRED tiny_model)
# A GEMM model also records its config-less factor per data type, fit on the shapes trained on.
pipeweave_cli_test(train_tiny_gemm_configless
                   "config-less GEMMs: 3 of 3 \\(GPU, shape\\) pairs trained on[^\n]*\nconfig-less bf16: [^\n]* median [0-9]+\.[0-9]+\nconfig-less fp8_e4m3: .*\nwrote [^\n]*tiny_gemm\.json"
                   train --op gemm --data "${ranking_csv}" --out "${CMAKE_CURRENT_BINARY_DIR}/tiny_gemm.json" --hidden 8 --epochs 2
                   --validation-fraction 0.5 --specs "${PROJECT_SOURCE_DIR}/data/gpus")
set_tests_properties(cli.train_tiny_gemm_configless PROPERTIES FIXTURES_SETUP tiny_gemm)
# With one of the three shapes in the test split (seed 1, test fraction 0.4), the factor is fit on the other two only.
pipeweave_cli_test(train_configless_not_on_test_shapes "8 train, 8 validation, 8 test\n.*config-less GEMMs: 2 of 2 \\(GPU, shape\\) pairs"
                   train --op gemm --data "${ranking_csv}" --out "${CMAKE_CURRENT_BINARY_DIR}/tiny_gemm_split.json" --hidden 8
                   --epochs 2 --test-fraction 0.4 --validation-fraction 0.5 --specs "${PROJECT_SOURCE_DIR}/data/gpus")
# A network for GEMMs without a config: one row per shape, the bundled GEMM model picking the configs.
set(tiny_configless "${CMAKE_CURRENT_BINARY_DIR}/tiny_gemm_configless.json")
pipeweave_cli_test(train_without_configs "configs chosen for 3 \\(GPU, shape\\) pairs by the bundled GEMM model\n.*gemm 3 rows: .*wrote [^\n]*tiny_gemm_configless\.json"
                   train --op gemm --without-configs --data "${ranking_csv}" --out "${tiny_configless}" --hidden 8 --epochs 2
                   --validation-fraction 0.5 --specs "${PROJECT_SOURCE_DIR}/data/gpus")
set_tests_properties(cli.train_without_configs PROPERTIES FIXTURES_SETUP tiny_configless)
# A network reading the analytical default config's demand (--config-pick): no chooser, and it
# answers a GEMM given without its config with no GEMM model beside it.
set(tiny_default_pick "${CMAKE_CURRENT_BINARY_DIR}/tiny_gemm_default_pick.json")
pipeweave_cli_test(train_config_pick_default "the analytical_default config for 3 \\(GPU, shape\\) pairs\n.*wrote [^\n]*tiny_gemm_default_pick\\.json"
                   train --op gemm --without-configs --config-pick analytical_default --data "${ranking_csv}" --out "${tiny_default_pick}"
                   --hidden 8 --epochs 2 --validation-fraction 0.5 --specs "${PROJECT_SOURCE_DIR}/data/gpus")
set_tests_properties(cli.train_config_pick_default PROPERTIES FIXTURES_SETUP tiny_default_pick)
pipeweave_cli_test(eval_config_pick_default "\noverall +3 "
                   eval --model "${tiny_default_pick}" --data "${ranking_csv}")
set_tests_properties(cli.eval_config_pick_default PROPERTIES FIXTURES_REQUIRED tiny_default_pick)
# A fine-tuned network keeps its start's pick; --config-pick must name it.
pipeweave_cli_test(train_config_pick_init "wrote [^\n]*tiny_gemm_default_pick_tuned\\.json"
                   train --op gemm --without-configs --init "${tiny_default_pick}" --data "${ranking_csv}" --epochs 2
                   --validation-fraction 0.5 --specs "${PROJECT_SOURCE_DIR}/data/gpus" --out "${CMAKE_CURRENT_BINARY_DIR}/tiny_gemm_default_pick_tuned.json")
pipeweave_cli_failure(train_config_pick_init_other "--config-pick must be the start model's pick: [^ ]*tiny_gemm_default_pick\\.json reads the analytical_default config's demand, got \"search\""
                      train --op gemm --without-configs --init "${tiny_default_pick}" --config-pick search --data "${ranking_csv}"
                      --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
# Beside it a GEMM model for GEMMs with their config answers none of its type's GEMMs given without one.
pipeweave_cli_failure(predict_config_pick_gemm_unused "--model must be a model of a kernel asked: it is a GEMM model for GEMMs with their config, and every GEMM asked comes without one and is answered at the config another --model picks without a search \\(the analytical default or a decision tree's\\), got \"[^\"]*tiny_gemm\\.json\""
                      predict --gpu H100-SXM --model "${tiny_default_pick}" --model "${CMAKE_CURRENT_BINARY_DIR}/tiny_gemm.json"
                      gemm:m=16,n=4096,k=4096,dtype=bf16)
pipeweave_cli_failure(e2e_config_pick_gemm_unused "--kernel-model must be a model of the run's kernels: it is a GEMM model for GEMMs with their config, and the run's bf16 GEMMs are answered at the config another --kernel-model picks without a search \\(the analytical default or a decision tree's\\), got \"[^\"]*tiny_gemm\\.json\""
                      e2e --gpu H100-SXM --workload "${cli_data}/workload_llama_tp2.json" --kernel-model "${tiny_default_pick}"
                      --kernel-model "${CMAKE_CURRENT_BINARY_DIR}/tiny_gemm.json")
set_tests_properties(cli.train_config_pick_init PROPERTIES FIXTURES_SETUP tiny_default_pick_tuned)
pipeweave_cli_test(predict_config_pick_tuned_kept "gemm:m=512,n=1024,k=2048,dtype=bf16 \\[tile 128x128x64 split_k 4 stages 6 cluster 1x1 ping_pong raster n\\]"
                   predict --gpu H100-SXM --model "${CMAKE_CURRENT_BINARY_DIR}/tiny_gemm_default_pick_tuned.json" gemm:m=512,n=1024,k=2048,dtype=bf16)
set_tests_properties(cli.predict_config_pick_tuned_kept PROPERTIES FIXTURES_REQUIRED tiny_default_pick_tuned)
set_tests_properties(cli.train_config_pick_init cli.train_config_pick_init_other cli.predict_config_pick_gemm_unused
                     cli.e2e_config_pick_gemm_unused PROPERTIES FIXTURES_REQUIRED "tiny_default_pick;tiny_gemm")
# A network reading the config a tree expects cuBLAS to run (tiny_tree_fp8.json: a depth-3 tree of
# data/models/served_config_tree.py --max-depth 3 over the H100's fp8 served rows, joined by
# served_config_tree_model.py with an 8-wide network trained on served_fp8_sample.csv).
set(tiny_tree "${cli_data}/tiny_tree_fp8.json")
pipeweave_cli_test(predict_config_tree "trained_model +gemm:m=64,n=4096,k=4096,dtype=fp8_e4m3 \\[tile 144x128x128 split_k 1 stages 6 cluster 1x2 swap_ab cooperative raster n\\]"
                   predict --gpu H100-SXM --model "${tiny_tree}" gemm:m=64,n=4096,k=4096,dtype=fp8_e4m3)
pipeweave_cli_test(eval_config_tree "\noverall +8 " eval --model "${tiny_tree}" --data "${cli_data}/served_fp8_sample.csv")
pipeweave_cli_test(train_config_tree_init "the cublas_tree config for 8 \\(GPU, shape\\) pairs\n.*wrote [^\n]*tiny_tree_tuned\\.json"
                   train --op gemm --without-configs --init "${tiny_tree}" --data "${cli_data}/served_fp8_sample.csv" --epochs 2
                   --validation-fraction 0.5 --specs "${PROJECT_SOURCE_DIR}/data/gpus" --out "${CMAKE_CURRENT_BINARY_DIR}/tiny_tree_tuned.json")
# Beside one that searches for another type (as the bundled bf16 network does), each answers its own.
pipeweave_cli_test(eval_config_pick_mixed "\noverall +3 "
                   eval --model "${tiny_tree}" --model "${CMAKE_CURRENT_BINARY_DIR}/tiny_gemm_configless_bf16.json" --data "${ranking_csv}")
set_tests_properties(cli.eval_config_pick_mixed PROPERTIES FIXTURES_REQUIRED tiny_configless_dtypes)
set_tests_properties(cli.train_config_tree_init PROPERTIES FIXTURES_SETUP tiny_tree_tuned)
pipeweave_cli_test(predict_config_tree_tuned "trained_model +gemm:m=64,n=4096,k=4096,dtype=fp8_e4m3 \\[tile 144x128x128 split_k 1 stages 6 cluster 1x2 swap_ab cooperative raster n\\]"
                   predict --gpu H100-SXM --model "${CMAKE_CURRENT_BINARY_DIR}/tiny_tree_tuned.json" gemm:m=64,n=4096,k=4096,dtype=fp8_e4m3)
set_tests_properties(cli.predict_config_tree_tuned PROPERTIES FIXTURES_REQUIRED tiny_tree_tuned)
# data/models/second_view_model.py joins a pick's model and a tree's as its second view
# (tests/check_second_view_model.py: the joined file answers the geometric mean of the two).
set(tiny_pick_fp8 "${CMAKE_CURRENT_BINARY_DIR}/tiny_pick_fp8.json")
pipeweave_cli_test(train_pick_fp8_both_types "wrote [^\n]*tiny_pick_fp8\\.json"
                   train --op gemm --without-configs --dtypes fp8_e4m3,fp8_e5m2 --data "${cli_data}/served_fp8_sample.csv"
                   --out "${tiny_pick_fp8}" --hidden 8 --epochs 2 --validation-fraction 0.5 --specs "${PROJECT_SOURCE_DIR}/data/gpus")
set_tests_properties(cli.train_pick_fp8_both_types PROPERTIES FIXTURES_SETUP tiny_pick_fp8)
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  file(MAKE_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/second_view_model")
  add_test(NAME cli.second_view_model_joins
           COMMAND Python3::Interpreter "${CMAKE_CURRENT_SOURCE_DIR}/check_second_view_model.py" ${cli}
                   "${tiny_pick_fp8}" "${tiny_tree}" "${CMAKE_CURRENT_BINARY_DIR}/second_view_model"
                   gemm:m=11096,n=4608,k=2304,dtype=fp8_e4m3)
  set_tests_properties(cli.second_view_model_joins PROPERTIES FIXTURES_REQUIRED tiny_pick_fp8 LABELS cli
                       PASS_REGULAR_EXPRESSION "^joined: [0-9.]+ us = sqrt")
endif()
pipeweave_cli_failure(train_lr_vanishing "--lr must be from 1e-7 to below 1 \\(smaller steps vanish in float weights\\), got \"1e-300\""
                      train --op gemm --data "${ranking_csv}" --lr 1e-300 --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_config_tree_needs_init "--config-pick cublas_tree needs the tree of a start model \\(--init\\): train cannot learn one"
                      train --op gemm --without-configs --config-pick cublas_tree --data "${cli_data}/served_fp8_sample.csv"
                      --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_config_pick_alone "--config-pick says whose config --without-configs reads; give both"
                      train --op gemm --config-pick search --data "${ranking_csv}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_config_pick_with_chooser "--chooser picks configs by a GEMM model; --config-pick analytical_default"
                      train --op gemm --without-configs --config-pick analytical_default --chooser "${PROJECT_SOURCE_DIR}/data/models/gemm.json"
                      --data "${ranking_csv}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_config_pick_unknown "--config-pick must be search, analytical_default or cublas_tree, got \"fastest\""
                      train --op gemm --without-configs --config-pick fastest --data "${ranking_csv}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
# How the rows were timed is read from their l2 column and recorded; --protocol must agree with it.
set(tiny_served "${CMAKE_CURRENT_BINARY_DIR}/tiny_served.json")
pipeweave_cli_test(train_served_rows "wrote [^\n]*tiny_served\\.json"
                   train --op gemm --data "${cli_data}/served_fp8_sample.csv" --out "${tiny_served}" --hidden 8 --epochs 2
                   --validation-fraction 0.5 --specs "${PROJECT_SOURCE_DIR}/data/gpus")
set_tests_properties(cli.train_served_rows PROPERTIES FIXTURES_SETUP tiny_served)
pipeweave_cli_test(predict_served_model "\"protocol\": \"served\""
                   predict --gpu H100-SXM --model "${tiny_served}" --json
                   "gemm:m=4096,n=4096,k=4096,dtype=fp8_e4m3,tile_m=128,tile_n=256,tile_k=128,stages=4,cluster_m=2")
set_tests_properties(cli.predict_served_model PROPERTIES FIXTURES_REQUIRED tiny_served)
# A bare file name is written in the working folder (the test's: the build tree).
pipeweave_cli_test(train_out_relative "wrote relative_silu_mul\\.json"
                   train --op silu_mul --data "${cli_data}/train_sample_silu_mul.csv" --out relative_silu_mul.json --epochs 1)
# An output whose folder is a file: refused before training (it was found after every epoch).
pipeweave_cli_failure(train_out_not_writable "--out [^ ]+/m.json: [^ ]+train_sample_silu_mul.csv is not a folder to write into"
                      train --op silu_mul --data "${cli_data}/train_sample_silu_mul.csv" --out "${cli_data}/train_sample_silu_mul.csv/m.json")
# Layers are bounded in number as in width (64 of 1,024 took 1.2 GB and more than ten seconds an epoch)
pipeweave_cli_failure(train_too_many_layers "--hidden must list at most 8 hidden layers, got \"16,16,16,16,16,16,16,16,16\""
                      train --op silu_mul --data "${cli_data}/eval_silu_mul.csv" --hidden 16,16,16,16,16,16,16,16,16
                      --out "${CMAKE_CURRENT_BINARY_DIR}/never_written.json")
pipeweave_cli_failure(train_protocol_disagrees "--protocol must say how the rows were timed: 0 of their 24 are served \\(l2 column\\), got \"served\""
                      train --op gemm --data "${ranking_csv}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json" --protocol served
                      --specs "${PROJECT_SOURCE_DIR}/data/gpus")
pipeweave_cli_failure(train_protocols_mixed "the rows were timed two ways: 8 served \\(l2 column \"served\"\\) and 24 not"
                      train --op gemm --data "${ranking_csv}" --data "${cli_data}/served_fp8_sample.csv"
                      --out "${CMAKE_CURRENT_BINARY_DIR}/never.json" --specs "${PROJECT_SOURCE_DIR}/data/gpus")
# The published fp8 split as published: GEMMs of the tile the published method assumes, trained
# as GEMMs with their config (not as shapes alone, which would have the chooser pick configs).
pipeweave_cli_test(train_published_split "gemm 60 rows: [^\n]*\n.*held-out shapes, the network alone: [0-9]+ rows.*wrote "
                   train --op gemm --data "${cli_data}/published/gemm_fp8_train_first30.csv" --hidden 8 --epochs 2
                   --validation-fraction 0.5 --out "${CMAKE_CURRENT_BINARY_DIR}/fp8_published.json")
# ... and refused as GEMMs without a config: their time alone depends on the tile that ran.
pipeweave_cli_failure(train_published_without_configs "H20 gemm:fp8_e4m3,108,8192,1024 was timed back to back with the tile that ran"
                      train --op gemm --data "${cli_data}/published/gemm_fp8_train_first30.csv" --without-configs --epochs 1
                      --out "${CMAKE_CURRENT_BINARY_DIR}/never_written.json")
pipeweave_cli_failure(eval_published_without_configs "H20 gemm:fp8_e4m3,108,8192,1024 was timed back to back with the tile that ran"
                      eval --data "${cli_data}/published/gemm_fp8_train_first30.csv" --without-configs)
pipeweave_cli_failure(eval_configless_model_needs_flag "answers for GEMMs given without a config: score it with --without-configs"
                      eval --model "${tiny_configless}" --data "${ranking_csv}" --ranking)
# Without the flag such a model is scored as it answers: on the shapes without their configs.
pipeweave_cli_test(eval_configless_model_implied "\nH100-SXM +3 [^\n]*\noverall +3 "
                   eval --model "${tiny_configless}" --data "${ranking_csv}")
set_tests_properties(cli.eval_configless_model_needs_flag cli.eval_configless_model_implied PROPERTIES FIXTURES_REQUIRED tiny_configless)
# Scored with it, the predictions are its own: they differ from the bundled network's.
pipeweave_cli_test(eval_configless_model "\nH100-SXM +3 [^\n]*\noverall +3 "
                   eval --model "${tiny_configless}" --without-configs --data "${ranking_csv}"
                   --report "${CMAKE_CURRENT_BINARY_DIR}/configless_tiny_report")
set_tests_properties(cli.eval_configless_model PROPERTIES FIXTURES_REQUIRED tiny_configless FIXTURES_SETUP configless_tiny_report)
add_test(NAME cli.eval_configless_model_is_used
         COMMAND ${CMAKE_COMMAND} -DA=${CMAKE_CURRENT_BINARY_DIR}/configless_tiny_report/eval.csv
                 -DB=${configless_report}/eval.csv -P "${CMAKE_CURRENT_SOURCE_DIR}/check_files_differ.cmake")
set_tests_properties(cli.eval_configless_model_is_used PROPERTIES FIXTURES_REQUIRED "configless_tiny_report;configless_report" LABELS cli)
pipeweave_cli_test(train_without_configs_init "wrote [^\n]*tiny_gemm_configless_tuned\.json"
                   train --op gemm --without-configs --init "${tiny_configless}" --data "${ranking_csv}" --epochs 2
                   --validation-fraction 0.5 --out "${CMAKE_CURRENT_BINARY_DIR}/tiny_gemm_configless_tuned.json" --specs "${PROJECT_SOURCE_DIR}/data/gpus")
set_tests_properties(cli.train_without_configs_init PROPERTIES FIXTURES_REQUIRED tiny_configless)
# One network per data type (--dtypes): trained on that type's shapes only, and scored together.
set(tiny_configless_bf16 "${CMAKE_CURRENT_BINARY_DIR}/tiny_gemm_configless_bf16.json")
set(tiny_configless_fp8 "${CMAKE_CURRENT_BINARY_DIR}/tiny_gemm_configless_fp8.json")
pipeweave_cli_test(train_without_configs_bf16 "configs chosen for 2 \\(GPU, shape\\) pairs by the bundled GEMM model\n.*gemm 2 rows: .*wrote [^\n]*tiny_gemm_configless_bf16\.json"
                   train --op gemm --without-configs --dtypes bf16 --data "${ranking_csv}" --out "${tiny_configless_bf16}" --hidden 8
                   --epochs 2 --validation-fraction 0.5 --specs "${PROJECT_SOURCE_DIR}/data/gpus")
pipeweave_cli_test(train_without_configs_fp8 "configs chosen for 8 \\(GPU, shape\\) pairs by the bundled GEMM model\n.*gemm 8 rows: .*wrote [^\n]*tiny_gemm_configless_fp8\.json"
                   train --op gemm --without-configs --dtypes fp8 --data "${cli_data}/served_fp8_sample.csv" --out "${tiny_configless_fp8}"
                   --hidden 8 --epochs 2 --validation-fraction 0.5 --specs "${PROJECT_SOURCE_DIR}/data/gpus")
set_tests_properties(cli.train_without_configs_bf16 cli.train_without_configs_fp8 PROPERTIES FIXTURES_SETUP tiny_configless_dtypes)
pipeweave_cli_test(eval_configless_per_dtype "\nH100-SXM +3 [^\n]*\noverall +3 "
                   eval --model "${tiny_configless_bf16}" --model "${tiny_configless_fp8}" --data "${ranking_csv}")
# One model that lists its type is scored on that type's rows alone (2 of the 3 shapes are bf16).
pipeweave_cli_test(eval_configless_one_dtype "\nH100-SXM +2 [^\n]*\noverall +2 "
                   eval --model "${tiny_configless_bf16}" --data "${ranking_csv}")
pipeweave_cli_failure(eval_configless_same_dtype_twice "--model [^ ]*tiny_gemm_configless_bf16\\.json answers for a data type an earlier --model answers for \\(give one model per type\\), got \"bf16\""
                      eval --model "${tiny_configless_bf16}" --model "${CMAKE_CURRENT_BINARY_DIR}/./tiny_gemm_configless_bf16.json"
                      --data "${ranking_csv}")
# A type with no rows beside one of its tensor path that has them (fp16 with bf16); alone, refused.
pipeweave_cli_test(train_dtypes_by_tensor_path "gemm 2 rows: .*wrote [^\n]*tiny_gemm_configless_bf16_fp16\\.json"
                   train --op gemm --without-configs --dtypes bf16,fp16 --data "${ranking_csv}"
                   --out "${CMAKE_CURRENT_BINARY_DIR}/tiny_gemm_configless_bf16_fp16.json" --hidden 8 --epochs 2
                   --validation-fraction 0.5 --specs "${PROJECT_SOURCE_DIR}/data/gpus")
pipeweave_cli_failure(train_dtypes_alone_without_rows "--dtypes must be a data type --data holds GEMM rows of, or listed beside one of its tensor path that has them \\(fp16 with bf16, fp8_e5m2 with fp8_e4m3\\), got \"fp16\""
                      train --op gemm --without-configs --dtypes fp16 --data "${ranking_csv}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_dtypes_init_other "answers for other data types than --dtypes lists"
                      train --op gemm --without-configs --init "${tiny_configless_bf16}" --dtypes fp8 --data "${ranking_csv}"
                      --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
set_tests_properties(cli.eval_configless_per_dtype cli.eval_configless_one_dtype cli.eval_configless_same_dtype_twice
                     cli.train_dtypes_init_other PROPERTIES FIXTURES_REQUIRED tiny_configless_dtypes)
pipeweave_cli_failure(eval_two_models_not_configless "--model is given more than once only for models for GEMMs without a config \\(one per data type\\); [^ ]*tiny_silu_mul\.json is not one"
                      eval --model "${tiny_configless_bf16}" --model "${tiny_model}" --data "${ranking_csv}")
set_tests_properties(cli.eval_two_models_not_configless PROPERTIES FIXTURES_REQUIRED "tiny_configless_dtypes;tiny_model")
pipeweave_cli_failure(train_dtypes_needs_without_configs "--dtypes trains a model for GEMMs without a config of those data types; give --without-configs"
                      train --op gemm --dtypes bf16 --data "${ranking_csv}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_dtypes_unknown "--dtypes must list data types \\(bf16, fp8_e4m3, ...\\), got \"fp4\""
                      train --op gemm --without-configs --dtypes bf16,fp4 --data "${ranking_csv}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_dtypes_not_in_data "--dtypes must be a data type --data holds GEMM rows of, or listed beside one of its tensor path that has them \\(fp16 with bf16, fp8_e5m2 with fp8_e4m3\\), got \"int8\""
                      train --op gemm --without-configs --dtypes int8 --data "${ranking_csv}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_dtypes_empty "--dtypes must list items joined by commas, none of them empty, got \",\""
                      train --op gemm --without-configs --dtypes , --data "${ranking_csv}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_chooser_other_split "--chooser [^ ]*tiny_gemm\.json was trained with split_seed \"1\", this run has \"2\""
                      train --op gemm --without-configs --chooser "${CMAKE_CURRENT_BINARY_DIR}/tiny_gemm.json" --seed 2
                      --data "${ranking_csv}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
set_tests_properties(cli.train_chooser_other_split PROPERTIES FIXTURES_REQUIRED tiny_gemm)
pipeweave_cli_failure(train_without_configs_no_ranking "--rank-weight orders a shape's configs"
                      train --op gemm --without-configs --rank-weight 1 --data "${ranking_csv}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_init_configless_mismatch "is a model for GEMMs without a config: fine-tune it with --without-configs"
                      train --op gemm --data "${ranking_csv}" --init "${tiny_configless}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
set_tests_properties(cli.train_init_configless_mismatch PROPERTIES FIXTURES_REQUIRED tiny_configless)
# A start model of another op family: its inputs mean another family's demand
pipeweave_cli_failure(train_init_other_family "the start model's op family must be the family trained \\(gemm\\), got rmsnorm"
                      train --op gemm --data "${ranking_csv}" --init "${PROJECT_SOURCE_DIR}/data/models/rmsnorm.json"
                      --validation-fraction 0.5 --out "${CMAKE_CURRENT_BINARY_DIR}/never.json" --specs "${PROJECT_SOURCE_DIR}/data/gpus")
pipeweave_cli_failure(train_chooser_alone "--chooser picks the configs for --without-configs"
                      train --op gemm --data "${ranking_csv}" --chooser "${tiny_configless}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_without_configs_not_gemm "--without-configs with --op must be gemm"
                      train --op silu_mul --without-configs --data "${train_sample}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_chooser_not_a_gemm_model "--chooser must hold a GEMM model for GEMMs with their config"
                      train --op gemm --without-configs --chooser "${tiny_configless}" --data "${ranking_csv}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
set_tests_properties(cli.train_chooser_not_a_gemm_model PROPERTIES FIXTURES_REQUIRED tiny_configless)
# An ensemble (--networks): the networks train side by side, each epoch line names its network;
# predict and rank take it with --model in the bundled GEMM model's place.
set(tiny_ensemble "${CMAKE_CURRENT_BINARY_DIR}/tiny_gemm_ensemble.json")
pipeweave_cli_test(train_ensemble "network  1 epoch    2: train MAPE .*wrote [^\n]*tiny_gemm_ensemble\.json \\(2 networks, validation MAPE"
                   train --op gemm --data "${ranking_csv}" --out "${tiny_ensemble}" --hidden 8 --epochs 2 --networks 2 --rank-weight 1
                   --validation-fraction 0.5 --specs "${PROJECT_SOURCE_DIR}/data/gpus")
set_tests_properties(cli.train_ensemble PROPERTIES FIXTURES_SETUP tiny_ensemble)
# The tiny model's training rows cover little: the GEMM lies outside them, and its efficiency comes
# from the pipe table those rows measured (pipe_efficiency); either way the model file answers.
pipeweave_cli_test(predict_with_model "\n +[0-9]+\.[0-9][0-9] +[0-9]+\.[0-9][0-9] +[01]\.[0-9][0-9][0-9] +[a-z0-9]+ +(trained_model|pipe_efficiency) +gemm:m=512"
                   predict --gpu H100-SXM --model "${tiny_ensemble}" "gemm:m=512,n=1024,k=2048,dtype=bf16,tile_m=128,tile_n=128,tile_k=64")
pipeweave_cli_test(rank_with_model "^GPU H100-SXM: [0-9]+ candidates, fastest first\n +rank +latency_us" rank --gpu H100-SXM --model "${tiny_ensemble}" ${gemm_text})
set(predict_plain "${cli};predict;--gpu;H100-SXM;gemm:m=512,n=1024,k=2048,dtype=bf16,tile_m=128,tile_n=128,tile_k=64")
add_test(NAME cli.predict_with_model_is_used
         COMMAND ${CMAKE_COMMAND} "-DFIRST=${predict_plain}" "-DSECOND=${predict_plain};--model;${tiny_ensemble}"
                 -P "${CMAKE_CURRENT_SOURCE_DIR}/check_outputs_differ.cmake")
set_tests_properties(cli.predict_with_model cli.rank_with_model cli.predict_with_model_is_used PROPERTIES FIXTURES_REQUIRED tiny_ensemble)
set_tests_properties(cli.predict_with_model_is_used PROPERTIES LABELS cli)
pipeweave_cli_failure(train_bad_networks "--networks must be a whole number from 1 to 64, got \"0\""
                      train --op gemm --data "${ranking_csv}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json" --networks 0)
pipeweave_cli_failure(predict_model_missing "no_such_model\.json" predict --gpu H100-SXM --model "${CMAKE_CURRENT_BINARY_DIR}/no_such_model.json" ${gemm_text})
pipeweave_cli_failure(train_needs_op "--op must be an op family" train --data "${train_sample}" --out "${tiny_model}")
pipeweave_cli_failure(train_wrong_family "train_sample_silu_mul\\.csv holds silu_mul rows, not gemm"
                      train --op gemm --data "${train_sample}" --out "${tiny_model}")
pipeweave_cli_failure(train_bad_hidden "--hidden must be layer widths" train --op silu_mul --data "${train_sample}" --out "${tiny_model}" --hidden 16,,8)
pipeweave_cli_failure(train_bad_rank_weight "--rank-weight must be a number >= 0, got \"-1\"" train --op silu_mul --data "${train_sample}" --out "${tiny_model}" --rank-weight -1)
pipeweave_cli_failure(train_unknown_holdout "--holdout-gpu must be a GPU the data holds, got \"B200\""
                      train --op silu_mul --data "${train_sample}" --out "${tiny_model}" --holdout-gpu B200)
pipeweave_cli_failure(eval_held_out_needs_model "--held-out needs --model" eval --data "${train_sample}" --held-out)
pipeweave_cli_failure(train_no_batch_norm_with_init "--no-batch-norm builds a new network without batch normalisation; the start model \\(--init\\) keeps its own"
                      train --op silu_mul --data "${train_sample}" --init "${PROJECT_SOURCE_DIR}/data/models/silu_mul.json" --no-batch-norm
                      --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_split_leaves_no_validation "^pipeweave: error: the split leaves no row to validate on: 300 rows at --test-fraction 0\\.2, --validation-fraction 0\\.001 \\(shapes, not rows, are split\\)\n$"
                      train --op silu_mul --data "${train_sample}" --validation-fraction 0.001 --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_split_leaves_no_training "the split leaves no row to train on: 300 rows at --test-fraction 0\\.2, --validation-fraction 0\\.15, --holdout-gpu H100-SXM"
                      train --op silu_mul --data "${train_sample}" --holdout-gpu H100-SXM --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_networks_other_than_init "^pipeweave: error: --networks must be 1 or the start model's 1 when fine-tuning \\(each of its networks is tuned\\), got \"2\"\n$"
                      train --op silu_mul --data "${train_sample}" --init "${PROJECT_SOURCE_DIR}/data/models/silu_mul.json" --networks 2
                      --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_hidden_with_init "--hidden sets a new network's layers; the start model \\(--init\\) keeps its own"
                      train --op silu_mul --data "${train_sample}" --init "${PROJECT_SOURCE_DIR}/data/models/silu_mul.json" --hidden 8
                      --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_rank_weight_without_pairs "--rank-weight orders a shape's configs, and no shape of these [0-9]+ rows \\(--op silu_mul\\) is trained on under two configs: there is nothing to order"
                      train --op silu_mul --data "${train_sample}" --rank-weight 1 --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_specs_not_a_folder "--specs must be a folder of <GPU>\\.calibrated\\.json specs"
                      train --op silu_mul --data "${train_sample}" --specs "${PROJECT_SOURCE_DIR}/README.md" --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")
pipeweave_cli_failure(train_spec_for_other_gpu "--spec must name a GPU the rows were measured on \\([^)]*\\), got \"A100-SXM="
                      train --op silu_mul --data "${train_sample}" --spec "A100-SXM=${PROJECT_SOURCE_DIR}/data/gpus/H200-SXM.calibrated.json"
                      --out "${CMAKE_CURRENT_BINARY_DIR}/never.json")

# ---- End to end ------------------------------------------------------------------------------
set(llama_config "${cli_data}/models/Llama-3.1-8B/config.json")
set(small_trace "${cli_data}/trace_small.csv")
pipeweave_cli_test(e2e_from_config
                   "^Llama-3\\.1-8B on 1 x H100-SXM: 6 iterations, 3 with prompt tokens, 3 decode-only\n +prefill \\(iterations with prompt tokens\\) +[0-9]+\\.[0-9]+ ms\n +median decode iteration +[0-9]+\\.[0-9]+ ms\n +total +[0-9]+\\.[0-9]+ ms\n +of which overhead +[0-9]+\\.[0-9]+ ms +\\(engine sglang[^\n]*\n +time to first token +median +[0-9.]+ ms, p90 +[0-9.]+ ms +\\(3 requests\\)\n +time per output token +median [^\n]*\n +engine sglang: 492 us per iteration, 0\\.63 us between kernels[^\n]*\n +tensor-bound kernels x 1\\.16 for the clock under sustained load \\(the GPU spec's\\)[^\n]*\n +operator +total_ms +share +launches\n +[a-z_]+ +[0-9.]+ +[0-9.]+% +[0-9]+\n"
                   e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --max-batched-tokens 1024)
# Without an engine: the workload's kernels alone, nothing added.
pipeweave_cli_test(e2e_engine_none "of which overhead +0\\.000 ms +\\(engine none;[^\n]*\n.*engine none: the workload's kernels only"
                   e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --max-batched-tokens 1024 --engine none)
pipeweave_cli_test(e2e_engine_terms "engine sglang: 100 us per iteration, 2\\.00 us between kernels"
                   e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --engine-terms 100,2)
pipeweave_cli_failure(e2e_bad_engine "engine must be sglang, vllm or none, got \"tgi\"" e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --engine tgi)
pipeweave_cli_failure(e2e_bad_engine_terms "--engine-terms must be ITERATION_US,KERNEL_GAP_US" e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --engine-terms 5)
pipeweave_cli_failure(e2e_engine_terms_without_engine "--engine-terms sets an engine's two terms; --engine none runs the kernels alone"
                      e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --engine none --engine-terms 5,5)
# Pipeline parallelism: two stages of four GPUs each, the activations handed over once an iteration.
pipeweave_cli_test(e2e_pipeline "^Llama-3\\.1-8B on 8 x H100-SXM \\(TP 4 x PP 2\\): 6 iterations.*\n +send_recv +[0-9.]+ +[0-9.]+% +6\n"
                   e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --max-batched-tokens 1024 --tp 4 --pp 2)
# A published workload as published: a FlashAttention-3 SGLang run; on an Ampere GPU the engine runs FlashAttention-2,
# while the workload's kernels alone cannot run there and say why.
set(published_fa3 "${cli_data}/published/Qwen2.5-14B_arxiv_8_fa3_tp1_pp1_first3.json")
pipeweave_cli_test(e2e_published "^Qwen2ForCausalLM on 1 x A100-SXM4-80GB: 3 iterations, 1 with prompt tokens, 2 decode-only\n"
                   e2e --gpu A100-SXM4-80GB --workload "${published_fa3}")
pipeweave_cli_failure(e2e_published_fa3_on_ampere "attention\\.impl runs on Hopper \\(compute capability 9\\.x\\) only; A100-SXM4-80GB is 8\\.0"
                      e2e --gpu A100-SXM4-80GB --workload "${published_fa3}" --engine none)
pipeweave_cli_test(e2e_published_json "\"engine\": \\{[^}]*\"name\": \"sglang\".*\"requests\": \\[\n +\\{[^}]*\"output_tokens\": 3.*\"time_to_first_token_us\": \\{[^}]*\"median\""
                   e2e --gpu H100-SXM --workload "${published_fa3}" --json)
# --kernel-model must reach the kernels: the GEMM model trained without the H200 answers the H200's GEMMs differently.
set(e2e_h200 "${cli};e2e;--gpu;H200-SXM;--workload;${cli_data}/workload_llama_tp2.json")
add_test(NAME cli.e2e_kernel_model
         COMMAND ${CMAKE_COMMAND} "-DFIRST=${e2e_h200}"
                 "-DSECOND=${e2e_h200};--kernel-model;${PROJECT_SOURCE_DIR}/data/models/holdout/gemm_without_h200.json"
                 -P "${CMAKE_CURRENT_SOURCE_DIR}/check_outputs_differ.cmake")
set_tests_properties(cli.e2e_kernel_model PROPERTIES LABELS cli)
pipeweave_cli_failure(e2e_tp_too_large "--tp must be a whole number from 1 to 65536, got \"70000\""
                      e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --tp 70000)
# The same trace without chunked prefill: 9 iterations (see test_workload.cpp).
pipeweave_cli_test(e2e_no_chunking "^Llama-3\\.1-8B on 1 x H100-SXM: 9 iterations, 2 with prompt tokens, 7 decode-only\n"
                   e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --max-batched-tokens 1024 --no-chunked-prefill)
# A workload file in the published layout (written by --write-workload from the same trace at TP 2).
pipeweave_cli_test(e2e_workload_file "^Llama-3\\.1-8B on 2 x H200-SXM: 6 iterations.*of which overhead +[0-9.]+ ms +\\(engine sglang; and 50 us per iteration.*\n +all_reduce +[0-9.]+ +[0-9.]+% +384\n"
                   e2e --gpu H200-SXM --workload "${cli_data}/workload_llama_tp2.json" --overhead-us 50)
pipeweave_cli_test(e2e_json "\"median_decode_iteration_us\": [0-9.]+.*\"operators\": \\[.*\"name\": \"gate_up_proj\".*\"per_iteration\": \\[.*\"phase\": \"mixed\""
                   e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --max-batched-tokens 1024 --json)
pipeweave_cli_test(e2e_report "wrote [^\n]*iterations\\.csv, [^\n]*requests\\.csv, [^\n]*timeline\\.svg, [^\n]*operators\\.svg\n"
                   e2e --gpu H100-SXM --workload "${cli_data}/workload_llama_tp2.json" --report "${CMAKE_CURRENT_BINARY_DIR}/e2e_report")
pipeweave_cli_failure(e2e_needs_gpu "e2e needs --gpu" e2e --workload "${cli_data}/workload_llama_tp2.json")
# --moe-zipf routes a mixture of experts' tokens with skew (fewer experts' weights read, so a
# different fused_moe time), is checked, and is refused for a model without experts.
set(e2e_mixtral "${cli};e2e;--gpu;H100-SXM;--model;${cli_data}/models/Mixtral-8x7B/config.json;--trace;${small_trace};--tp;2")
add_test(NAME cli.e2e_moe_zipf
         COMMAND ${CMAKE_COMMAND} "-DFIRST=${e2e_mixtral}" "-DSECOND=${e2e_mixtral};--moe-zipf;1.2"
                 -P "${CMAKE_CURRENT_SOURCE_DIR}/check_outputs_differ.cmake")
set_tests_properties(cli.e2e_moe_zipf PROPERTIES LABELS cli)
pipeweave_cli_failure(e2e_moe_zipf_range "--moe-zipf must be a Zipf exponent within \\[0, 4\\]"
                      e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --moe-zipf 5)
pipeweave_cli_failure(e2e_moe_zipf_dense "--moe-zipf: the run has no mixture-of-experts layer"
                      e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --moe-zipf 1)
# --expert-parallel gives each rank whole experts (a share of them) instead of a slice of every
# expert: another fused_moe kernel; a dense model has no experts to share out.
add_test(NAME cli.e2e_expert_parallel
         COMMAND ${CMAKE_COMMAND} "-DFIRST=${e2e_mixtral}" "-DSECOND=${e2e_mixtral};--expert-parallel"
                 -P "${CMAKE_CURRENT_SOURCE_DIR}/check_outputs_differ.cmake")
set_tests_properties(cli.e2e_expert_parallel PROPERTIES LABELS cli)
pipeweave_cli_test(e2e_expert_parallel_named "^Mixtral-8x7B on 2 x H100-SXM \\(experts over EP 2\\):"
                   e2e --gpu H100-SXM --model "${cli_data}/models/Mixtral-8x7B/config.json" --trace "${small_trace}" --tp 2 --expert-parallel)
pipeweave_cli_test(e2e_expert_parallel_json "\"expert_parallel_size\": 2"
                   e2e --gpu H100-SXM --model "${cli_data}/models/Mixtral-8x7B/config.json" --trace "${small_trace}" --tp 2 --expert-parallel --json)
pipeweave_cli_failure(e2e_expert_parallel_one_rank "--expert-parallel shares the experts over the --tp ranks: with --tp 1 there is one rank"
                      e2e --gpu H100-SXM --model "${cli_data}/models/Mixtral-8x7B/config.json" --trace "${small_trace}" --expert-parallel)
pipeweave_cli_failure(e2e_expert_parallel_dense "--expert-parallel: the model has no mixture-of-experts layer"
                      e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --tp 2 --expert-parallel)
pipeweave_cli_failure(e2e_workload_refuses_expert_parallel "--expert-parallel schedules a trace"
                      e2e --gpu H100-SXM --workload "${cli_data}/workload_llama_tp2.json" --expert-parallel)
pipeweave_cli_failure(e2e_needs_input "either --workload FILE\\.json, or --model config\\.json with --trace" e2e --gpu H100-SXM)
pipeweave_cli_failure(e2e_model_needs_trace "--model and --trace go together" e2e --gpu H100-SXM --model "${llama_config}")
pipeweave_cli_failure(e2e_bad_tp "--tp must be a whole number from 1 to 65536, got \"0\"" e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --tp 0)
pipeweave_cli_failure(e2e_tp_must_divide "tp must be 3: must divide num_attention_heads|tp.*must divide num_attention_heads \\(32\\)"
                      e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --tp 3)
pipeweave_cli_failure(e2e_bad_overhead "--overhead-us must be a number of microseconds from 0 to 1e\\+06, got \"-5\""
                      e2e --gpu H100-SXM --workload "${cli_data}/workload_llama_tp2.json" --overhead-us -5)
# Overheads past a second would only hide the kernels (at 1e308 the totals were infinite)
pipeweave_cli_failure(e2e_huge_overhead "--kernel-overhead-us must be a number of microseconds from 0 to 1e\\+06, got \"1e308\""
                      e2e --gpu H100-SXM --workload "${cli_data}/workload_llama_tp2.json" --kernel-overhead-us 1e308)
pipeweave_cli_failure(e2e_huge_engine_terms "--engine-terms must be ITERATION_US,KERNEL_GAP_US, two numbers of microseconds from 0 to 1e\\+06, got \"1e308,1\""
                      e2e --gpu H100-SXM --workload "${cli_data}/workload_llama_tp2.json" --engine-terms 1e308,1)
# A directory named as a model file says so (it read as empty JSON)
pipeweave_cli_failure(e2e_kernel_model_directory "cannot read model weights file [^\n]*: Is a directory"
                      e2e --gpu H100-SXM --workload "${cli_data}/workload_llama_tp2.json" --kernel-model "${CMAKE_CURRENT_BINARY_DIR}")
# A workload file is scheduled already: what schedules a trace is refused by name, not ignored
pipeweave_cli_failure(e2e_workload_refuses_tp "--tp schedules a trace \\(--model with --trace\\): a --workload file is already scheduled"
                      e2e --gpu H100-SXM --workload "${cli_data}/workload_llama_tp2.json" --tp 4)
pipeweave_cli_failure(e2e_workload_refuses_dtype "--dtype schedules a trace"
                      e2e --gpu H100-SXM --workload "${cli_data}/workload_llama_tp2.json" --dtype fp8)
pipeweave_cli_test(e2e_sustained "\n +tensor-bound kernels x 1\\.16 for the clock under sustained load \\(--sustained-slowdown\\); those answered from served rows over the x 1\\.01 their labels hold\n"
                   e2e --gpu H100-SXM --workload "${cli_data}/workload_llama_tp2.json" --sustained-slowdown 1.16)
pipeweave_cli_failure(e2e_bad_sustained "--sustained-slowdown must be a factor from 1 to 10 [^\n]*got \"0\\.8\""
                      e2e --gpu H100-SXM --workload "${cli_data}/workload_llama_tp2.json" --sustained-slowdown 0.8)
pipeweave_cli_test(e2e_sustained_utilization "x 1\\.16 for the clock under sustained load \\(--sustained-slowdown\\), in proportion to each iteration's tensor utilisation up to 0\\.92"
                   e2e --gpu H100-SXM --workload "${cli_data}/workload_llama_tp2.json" --sustained-slowdown 1.16 --sustained-utilization 0.92)
pipeweave_cli_failure(e2e_utilization_needs_slowdown "--sustained-utilization scales --sustained-slowdown: give both"
                      e2e --gpu H100-SXM --workload "${cli_data}/workload_llama_tp2.json" --sustained-utilization 0.9)
pipeweave_cli_failure(e2e_bad_sustained_utilization "--sustained-utilization must be a tensor utilisation in \\[0, 1\\], got \"2\""
                      e2e --gpu H100-SXM --workload "${cli_data}/workload_llama_tp2.json" --sustained-slowdown 1.16 --sustained-utilization 2)
# A request of a billion decode steps (a billion iterations) is refused as the trace is read.
pipeweave_cli_failure(e2e_trace_request_too_long "trace_billion_decode\\.csv line 2 column num_decode_tokens must be an integer from 0 to 16777216, got \"1000000000\""
                      e2e --gpu H100-SXM --model "${llama_config}" --trace "${cli_data}/trace_billion_decode.csv")
pipeweave_cli_failure(e2e_missing_trace "cannot open trace file [^\n]*nothing\\.csv"
                      e2e --gpu H100-SXM --model "${llama_config}" --trace "${CMAKE_CURRENT_BINARY_DIR}/nothing.csv")
# --measured: made-up times for the six iterations, to check the comparison's shape (not a measurement).
set(e2e_args e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --max-batched-tokens 1024)
pipeweave_cli_test(e2e_measured "predicted against measured per iteration:\n +all +6 iterations: mean \\|error\\| +[0-9.]+%[^\n]*\n +prefill +1 iterations: [^\n]*\n +mixed +2 iterations: [^\n]*\n +decode +3 iterations: "
                   ${e2e_args} --measured "${cli_data}/e2e_measured_small.csv")
pipeweave_cli_test(e2e_measured_report "wrote [^\n]*iterations\\.csv, [^\n]*requests\\.csv, [^\n]*timeline\\.svg, [^\n]*operators\\.svg and [^\n]*iterations\\.svg"
                   ${e2e_args} --measured "${cli_data}/e2e_measured_small.csv" --report "${CMAKE_CURRENT_BINARY_DIR}/e2e_measured_report")
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/e2e_measured_bad.csv" "iteration,measured_us\n0,12abc\n")
pipeweave_cli_failure(e2e_measured_bad_cell "e2e_measured_bad\\.csv line 2 column measured_us must be a positive number, got \"12abc\""
                      ${e2e_args} --measured "${CMAKE_CURRENT_BINARY_DIR}/e2e_measured_bad.csv")
# A time no timer reads (its error percentage would be infinite, or 300 digits long)
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/e2e_measured_huge.csv" "iteration,measured_us\n0,1e308\n")
pipeweave_cli_failure(e2e_measured_out_of_range "e2e_measured_huge\\.csv line 2 column measured_us must be within \\[0\\.001, 1e11\\] us, got \"1e308\""
                      ${e2e_args} --measured "${CMAKE_CURRENT_BINARY_DIR}/e2e_measured_huge.csv")
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/e2e_measured_twice.csv" "iteration,measured_us\n0,100\n0,200\n")
pipeweave_cli_failure(e2e_measured_iteration_twice "e2e_measured_twice\\.csv line 3 column iteration must name each iteration once, got 0"
                      ${e2e_args} --measured "${CMAKE_CURRENT_BINARY_DIR}/e2e_measured_twice.csv")
pipeweave_cli_failure(e2e_measured_unknown_iteration "e2e_measured_small\\.csv names 6 iterations, 1 of them in the workload: iteration 1 is not in it"
                      e2e --gpu H100-SXM --model "${llama_config}" --trace "${cli_data}/trace_one.csv" --measured "${cli_data}/e2e_measured_small.csv")

# Outputs checked before any work: never one of the command's inputs, never a directory; a
# report folder that is a file is refused as such.
# Written through a symbolic link, not over it; a device is written to as it is, its error said
# (the file renamed over the path had replaced /dev/full itself, as root).
add_test(NAME cli.e2e_write_workload_through_link
         COMMAND ${CMAKE_COMMAND} -DCLI=${cli} -DWORK=${CMAKE_CURRENT_BINARY_DIR}/write_through_link
                 -DCONFIG=${llama_config} -DTRACE=${small_trace} -P "${CMAKE_CURRENT_SOURCE_DIR}/check_write_through_link.cmake")
set_tests_properties(cli.e2e_write_workload_through_link PROPERTIES LABELS cli)
if(EXISTS /dev/full)
  pipeweave_cli_failure(e2e_write_workload_full_device "cannot write /dev/full: No space left on device"
                        e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --write-workload /dev/full)
endif()
# A run without a decode step says so, not "0.000 ms"
pipeweave_cli_test(e2e_prefill_only "\n +median decode iteration +none\n.*\n +time per output token +none \\(no request decoded past its first token\\)\n"
                   e2e --gpu H100-SXM --model "${llama_config}" --trace "${cli_data}/trace_prefill_only.csv")
pipeweave_cli_failure(e2e_write_workload_over_trace "--write-workload [^ ]*trace_small\\.csv is the same file as --trace [^ ]*trace_small\\.csv: it would be written over"
                      e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}" --write-workload "${cli_data}/./trace_small.csv")
# A model no kernel asked is of (it went unused, exit 0): refused by name.
pipeweave_cli_failure(predict_model_unused "--model must be a model of a kernel asked: it is a rmsnorm model, and no rmsnorm kernel is asked"
                      predict --gpu H100-SXM --model "${PROJECT_SOURCE_DIR}/data/models/rmsnorm.json" ${gemm_text})
pipeweave_cli_failure(e2e_kernel_model_unused "--kernel-model must be a model of the run's kernels: it is a fused_moe model, and the run has no mixture-of-experts layer"
                      e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}"
                      --kernel-model "${PROJECT_SOURCE_DIR}/data/models/fused_moe.json.gz")
# A model for GEMMs without a config where every GEMM has its config, or is of a type it does not
# list (checked by what it answers, not by family alone)
pipeweave_cli_failure(predict_configless_model_unused "--model must be a model of a kernel asked: it is a model for GEMMs without a config \\(fp8_e4m3, fp8_e5m2\\), and every GEMM predicted has its config or another data type"
                      predict --gpu H100-SXM --model "${PROJECT_SOURCE_DIR}/data/models/gemm_configless_fp8.json.gz" gemm:m=64,n=4096,k=4096
                      gemm:m=64,n=4096,k=4096,dtype=fp8_e4m3,tile_m=128,tile_n=128,tile_k=64,stages=4)
pipeweave_cli_test(predict_configless_model_used "gemm:m=64,n=4096,k=4096,dtype=fp8_e4m3 "
                   predict --gpu H100-SXM --model "${PROJECT_SOURCE_DIR}/data/models/gemm_configless_fp8.json.gz"
                   gemm:m=64,n=4096,k=4096,dtype=fp8_e4m3)
# Such models of several data types are a set: one unused beside one used is no error
pipeweave_cli_test(predict_configless_model_set "trained_model +gemm:m=64,n=4096,k=4096 "
                   predict --gpu H100-SXM --model "${PROJECT_SOURCE_DIR}/data/models/gemm_configless_fp8.json.gz"
                   --model "${PROJECT_SOURCE_DIR}/data/models/gemm_configless_bf16.json.gz" gemm:m=64,n=4096,k=4096)
pipeweave_cli_test(e2e_configless_model_set "total "
                   e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}"
                   --kernel-model "${PROJECT_SOURCE_DIR}/data/models/gemm_configless_fp8.json.gz"
                   --kernel-model "${PROJECT_SOURCE_DIR}/data/models/gemm_configless_bf16.json.gz")
pipeweave_cli_failure(e2e_configless_model_unused "--kernel-model must be a model of the run's kernels: it is a model for GEMMs without a config \\(fp8_e4m3, fp8_e5m2\\), and the run's GEMMs are bf16"
                      e2e --gpu H100-SXM --model "${llama_config}" --trace "${small_trace}"
                      --kernel-model "${PROJECT_SOURCE_DIR}/data/models/gemm_configless_fp8.json.gz")
# Nor over the workload it reads (it was rewritten in place, as adjusted: the file as given lost).
pipeweave_cli_failure(e2e_write_workload_over_workload "--write-workload [^ ]*workload_llama8b_48\\.json is the same file as --workload"
                      e2e --gpu H100-SXM --workload "${h100_report}/workload_llama8b_48.json"
                      --write-workload "${h100_report}/./workload_llama8b_48.json")
pipeweave_cli_failure(calibrate_out_over_log "--out [^ ]*microbench_synthetic\\.json is the same file as --from-log"
                      calibrate --from-log "${synthetic_log}" --out "${cli_data}/./microbench_synthetic.json")
pipeweave_cli_failure(train_out_directory "--out [^ ]* is a directory, not a file to write"
                      train --op silu_mul --data "${train_sample}" --out "${CMAKE_CURRENT_BINARY_DIR}" --hidden 8 --epochs 2)
pipeweave_cli_failure(train_out_over_data "--out [^ ]*train_sample_silu_mul\\.csv is the same file as --data"
                      train --op silu_mul --data "${train_sample}" --out "${cli_data}/./train_sample_silu_mul.csv" --hidden 8 --epochs 2)
pipeweave_cli_failure(collect_out_over_raw "--out [^ ]*collect_raw_gemm\\.jsonl is the same file as --from-raw"
                      collect --from-raw "${raw_gemm}" --out "${cli_data}/./collect_raw_gemm.jsonl")
pipeweave_cli_failure(e2e_report_is_a_file "--report [^ ]*trace_small\\.csv is a file, not a folder to write into"
                      ${e2e_args} --report "${small_trace}")
pipeweave_cli_failure(collect_raw_is_a_directory "cannot read raw measurements file [^ ]*: Is a directory"
                      collect --from-raw "${CMAKE_CURRENT_BINARY_DIR}" --out "${CMAKE_CURRENT_BINARY_DIR}/never.csv")
