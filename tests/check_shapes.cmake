# pipeweave shapes is deterministic: the same seed gives the same list, another seed another, and
# the committed lists in data/shapes/ are what `pipeweave shapes --op OP --seed 1` prints.
#   cmake -DCLI=<pipeweave> -DWORK=<dir> -DCOMMITTED=<data/shapes> -P check_shapes.cmake
file(MAKE_DIRECTORY "${WORK}")
foreach(op gemm rmsnorm silu_mul attention attention_decode attention_decode_long)
  execute_process(COMMAND ${CLI} shapes --op ${op} --seed 1 OUTPUT_VARIABLE first RESULT_VARIABLE rc1)
  execute_process(COMMAND ${CLI} shapes --op ${op} --seed 1 OUTPUT_VARIABLE second RESULT_VARIABLE rc2)
  execute_process(COMMAND ${CLI} shapes --op ${op} --seed 2 OUTPUT_VARIABLE other RESULT_VARIABLE rc3)
  if(NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0 OR NOT rc3 EQUAL 0)
    message(FATAL_ERROR "pipeweave shapes --op ${op} failed")
  endif()
  if(NOT first STREQUAL second)
    message(FATAL_ERROR "pipeweave shapes --op ${op} --seed 1 printed two different lists")
  endif()
  if(first STREQUAL other)
    message(FATAL_ERROR "pipeweave shapes --op ${op}: seeds 1 and 2 gave the same list")
  endif()
  file(READ "${COMMITTED}/${op}.csv" committed)
  if(NOT first STREQUAL committed)
    message(FATAL_ERROR "data/shapes/${op}.csv is not what pipeweave shapes --op ${op} --seed 1 prints")
  endif()
endforeach()
# The lists drawn with other flags, as docs/experiments/attention.md's commands draw them.
foreach(entry "attention_hd64|attention --head-dim 64 --seed 2 --count 800"
              "attention_decode_hd64|attention_decode --head-dim 64 --seed 2 --count 200"
              "attention_hd256|attention --head-dim 256 --seed 2 --count 800"
              "attention_decode_hd256|attention_decode --head-dim 256 --seed 2 --count 200"
              "attention_decode_long|attention_decode_long --seed 1")
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 file)
  list(GET parts 1 flags)
  separate_arguments(flags)
  execute_process(COMMAND ${CLI} shapes --op ${flags} OUTPUT_VARIABLE printed RESULT_VARIABLE rc)
  file(READ "${COMMITTED}/${file}.csv" committed)
  if(NOT rc EQUAL 0 OR NOT printed STREQUAL committed)
    message(FATAL_ERROR "data/shapes/${file}.csv is not what pipeweave shapes --op ${flags} prints")
  endif()
endforeach()
