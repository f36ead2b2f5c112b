# A file written through a symbolic link lands in the link's target, and the link stays a link
# (the CLI once renamed a file of its own over whatever the path named: a link, or /dev/full):
#   cmake -DCLI=<pipeweave> -DWORK=<folder> -DCONFIG=<config.json> -DTRACE=<trace.csv> -P check_write_through_link.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
file(WRITE "${WORK}/target.json" "before")
file(CREATE_LINK "target.json" "${WORK}/link.json" SYMBOLIC)
execute_process(COMMAND "${CLI}" e2e --gpu H100-SXM --model "${CONFIG}" --trace "${TRACE}" --write-workload "${WORK}/link.json"
                RESULT_VARIABLE status OUTPUT_QUIET ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "e2e --write-workload through a link failed (${status}): ${errors}")
endif()
if(NOT IS_SYMLINK "${WORK}/link.json")
  message(FATAL_ERROR "${WORK}/link.json is no longer a symbolic link: the write replaced it")
endif()
file(READ "${WORK}/target.json" written)
if(NOT written MATCHES "\"model_params\"")
  message(FATAL_ERROR "the link's target does not hold the workload: ${written}")
endif()
file(GLOB left "${WORK}/*.partial")
if(left)
  message(FATAL_ERROR "a partial file was left: ${left}")
endif()
# /dev/stdout is the process's own output: written through it, not opened again (opened again, the
# redirected file was truncated and the summary printed over the workload).
if(EXISTS /dev/stdout)
  execute_process(COMMAND "${CLI}" e2e --gpu H100-SXM --model "${CONFIG}" --trace "${TRACE}" --write-workload /dev/stdout
                  RESULT_VARIABLE status OUTPUT_FILE "${WORK}/stdout.txt" ERROR_VARIABLE errors)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "e2e --write-workload /dev/stdout failed (${status}): ${errors}")
  endif()
  file(READ "${WORK}/stdout.txt" both)
  if(NOT both MATCHES "^\\{\n \"model\": " OR NOT both MATCHES "\n}\nLlama-3\\.1-8B on 1 x H100-SXM: ")
    message(FATAL_ERROR "the workload and the summary did not both reach stdout whole: ${both}")
  endif()
endif()
