# Builds tests/consumer against pipeweave, installed (MODE=find_package) or vendored
# (MODE=add_subdirectory), runs it, and checks its output.
file(REMOVE_RECURSE "${WORK}")
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGN}\n${output}")
  endif()
  set(last_output "${output}" PARENT_SCOPE)
endfunction()
if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} --install "${PROJECT_BINARY}" --prefix "${WORK}/prefix")
  run(${CMAKE_COMMAND} -S "${CONSUMER}" -B "${WORK}/build" -DPIPEWEAVE_MODE=find_package
      "-DCMAKE_PREFIX_PATH=${WORK}/prefix")
else()
  run(${CMAKE_COMMAND} -S "${CONSUMER}" -B "${WORK}/build" -DPIPEWEAVE_MODE=add_subdirectory
      "-DPIPEWEAVE_SOURCE=${PROJECT_SOURCE}" -DPIPEWEAVE_BUILD_CUDA=OFF -DPIPEWEAVE_BUILD_CLI=OFF)
endif()
run(${CMAKE_COMMAND} --build "${WORK}/build" --parallel 2)
run("${WORK}/build/consumer")
if(NOT last_output MATCHES "consumer: gemm 4096\\^3 on H100-SXM: [0-9.]+ us")
  message(FATAL_ERROR "unexpected consumer output: ${last_output}")
endif()
message(STATUS "${last_output}")
